"""Worker recycling: replace a worker process after so many jobs, or once it grew too big.

A worker that reaches its bound stops claiming, lets its running jobs finish (however
long they take: nothing goes back to the queue) and exits with a status of its own, by
which the supervisor knows to start a fresh one at once, without the back-off of a
crash, and tells the new one why it replaced the last.
"""

from __future__ import annotations

import logging
import os
import resource
import sys
import threading

logger = logging.getLogger("steady_queue.processes")

# With every thread busy there is nothing to poll for: a finishing job wakes the worker.
WAIT_FOR_IDLE_THREAD = 60.0

# Exit statuses of a recycled worker (sysexits' EX_TEMPFAIL and the next one).
EXIT_AFTER_JOBS = 75
EXIT_ABOVE_MEMORY = 76
EXIT_STUCK = 77
EXIT_STATUSES = {EXIT_AFTER_JOBS: "jobs", EXIT_ABOVE_MEMORY: "memory", EXIT_STUCK: "stuck"}

MIB = 1024 * 1024


def resident_memory_mib() -> float:
    """This process's resident memory now (Linux), else its peak so far, in MiB."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / MIB
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # Linux counts ru_maxrss in KiB, macOS in bytes.
        return peak / MIB if sys.platform == "darwin" else peak / 1024


class Recycling:
    """A worker's recycling: its bounds, the jobs it started, and why it is recycled.

    The worker owns one: it counts each job it starts (``count``), asks how many more it
    may start (``left``) and whether a bound was passed (``due``). Thread-safe; it never
    calls back into the worker. ``owner`` is only what its log lines name.
    """

    def __init__(
        self, *, after_jobs: int | None = None, above_memory: int | None = None, owner=None
    ):
        self.after_jobs = after_jobs
        self.above_memory = above_memory
        self.owner = owner
        #: Why the worker is recycled (None while no bound was passed), and its exit status.
        self.reason: str | None = None
        self.exit_status = 0
        self._lock = threading.Lock()
        self._started = 0

    @property
    def enabled(self) -> bool:
        return self.after_jobs is not None or self.above_memory is not None

    @property
    def started(self) -> int:
        """Jobs the worker handed to its threads (or its event loop) so far."""
        with self._lock:
            return self._started

    def metadata(self) -> dict:
        """The bounds, for the worker's row."""
        found = {"recycle_after_jobs": self.after_jobs, "recycle_above_memory": self.above_memory}
        return {key: value for key, value in found.items() if value is not None}

    def count(self, jobs: int = 1) -> None:
        """Count ``jobs`` started by the worker."""
        with self._lock:
            self._started += jobs

    def left(self, in_flight: int = 0) -> int | None:
        """How many more jobs the worker may start (None: no bound), with ``in_flight``
        claims being made now counted as started."""
        if self.after_jobs is None:
            return None
        with self._lock:
            return self.after_jobs - self._started - in_flight

    def due(self) -> bool:
        """Whether a bound was passed (jobs started, or memory now); logs the first time."""
        if not self.enabled or self.reason is not None:
            return self.reason is not None
        started = self.started
        # Memory counts once a job ran: a fresh worker above the bound would otherwise be
        # replaced by another as big, again and again, and run nothing.
        watched = self.above_memory is not None and started > 0
        if not self.check(started, resident_memory_mib() if watched else 0.0):
            return False
        logger.info(
            "%s is recycled %s: it claims no more and stops once its jobs finish",
            self.owner,
            self.reason,
        )
        return True

    def check(self, jobs_run: int, memory_mib: float) -> bool:
        """Record the first bound passed; True once the worker is to be recycled."""
        with self._lock:
            if self.reason is None:
                if self.after_jobs is not None and jobs_run >= self.after_jobs:
                    self.reason, self.exit_status = f"after {jobs_run} jobs", EXIT_AFTER_JOBS
                elif self.above_memory is not None and memory_mib > self.above_memory:
                    self.reason = f"at {memory_mib:.0f} MiB, above {self.above_memory} MiB"
                    self.exit_status = EXIT_ABOVE_MEMORY
            return self.reason is not None

    def stuck(self, grace: float) -> None:
        """Recycle: a thread stayed stuck in a job past its timeout for ``grace`` seconds."""
        with self._lock:
            if self.reason is not None:
                return
            self.reason = f"with a job stuck {grace:g} s past its timeout"
            self.exit_status = EXIT_STUCK
        logger.warning(
            "%s is recycled %s: it claims no more and stops once its other jobs finish",
            self.owner,
            self.reason,
        )


def describe(status: int, after_jobs: int | None, above_memory: int | None) -> str:
    """The supervisor's words for a recycled worker's exit ``status``."""
    if EXIT_STATUSES.get(status) == "jobs":
        return f"recycled after {after_jobs} jobs"
    if EXIT_STATUSES.get(status) == "stuck":
        return "recycled with a job stuck past its timeout"
    return f"recycled above {above_memory} MiB of memory"
