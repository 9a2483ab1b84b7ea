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
from dataclasses import dataclass

import steady_queue

from ..configuration import seconds

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


@dataclass
class Recycling:
    """A worker's bounds, and the reason it passed one (None while it has not)."""

    after_jobs: int | None = None
    above_memory: int | None = None
    reason: str | None = None
    exit_status: int = 0

    @property
    def enabled(self) -> bool:
        return self.after_jobs is not None or self.above_memory is not None

    def check(self, jobs_run: int, memory_mib: float) -> bool:
        """Record the first bound passed; True once the worker is to be recycled."""
        if self.reason is None:
            if self.after_jobs is not None and jobs_run >= self.after_jobs:
                self.reason, self.exit_status = f"after {jobs_run} jobs", EXIT_AFTER_JOBS
            elif self.above_memory is not None and memory_mib > self.above_memory:
                self.reason = f"at {memory_mib:.0f} MiB, above {self.above_memory} MiB"
                self.exit_status = EXIT_ABOVE_MEMORY
        return self.reason is not None

    def stuck(self, grace: float) -> None:
        """Recycle: a thread stayed stuck in a job past its timeout for ``grace`` seconds."""
        if self.reason is None:
            self.reason = f"with a job stuck {grace:g} s past its timeout"
            self.exit_status = EXIT_STUCK


def describe(status: int, after_jobs: int | None, above_memory: int | None) -> str:
    """The supervisor's words for a recycled worker's exit ``status``."""
    if EXIT_STATUSES.get(status) == "jobs":
        return f"recycled after {after_jobs} jobs"
    if EXIT_STATUSES.get(status) == "stuck":
        return "recycled with a job stuck past its timeout"
    return f"recycled above {above_memory} MiB of memory"


class RecyclingWorker:
    """The worker's side of recycling: count the jobs, check the bounds, stop when idle.

    A mixin of ``Worker``: it uses the worker's lock, counts, pool and event loop.
    """

    def _check_stuck_threads(self) -> None:
        """Recycle once a given-up thread (or the loop) has been stuck for ``timeout_grace``."""
        alive = {thread.ident for thread in self.pool.stuck_threads()}
        if self.async_slots is not None and self.async_slots.stuck():
            alive.add(self.async_slots.thread_id)
        if self._stuck.past_grace(alive) and self.recycling.reason is None:
            self.recycling.stuck(seconds(steady_queue.timeout_grace))
            logger.warning(
                "%s is recycled %s: it claims no more and stops once its other jobs finish",
                self,
                self.recycling.reason,
            )

    def _count_job(self) -> None:
        """Count a job run; past a recycling bound, the worker claims no more."""
        with self._lock:
            self.jobs_run += 1
        self._check_recycling()

    def _check_recycling(self) -> bool:
        """Whether a recycling bound was passed (jobs started, or memory now)."""
        if not self.recycling.enabled or self.recycling.reason is not None:
            return self.recycling.reason is not None
        with self._lock:
            started = self._started
        # Memory counts once a job ran: a fresh worker above the bound would otherwise be
        # replaced by another as big, again and again, and run nothing.
        watched = self.recycling.above_memory is not None and started > 0
        memory = resident_memory_mib() if watched else 0.0
        if not self.recycling.check(started, memory):
            return False
        logger.info(
            "%s is recycled %s: it claims no more and stops once its jobs finish",
            self,
            self.recycling.reason,
        )
        return True

    def _recycle_when_idle(self) -> float:
        """Once the running jobs have finished, stop with the exit status of recycling."""
        if self.running_job_ids:
            return WAIT_FOR_IDLE_THREAD  # a finishing job wakes the worker
        self.exit_status = self.recycling.exit_status
        self.stop()
        return 0
