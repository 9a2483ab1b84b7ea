"""The supervisor's children as threads of its own process (async mode, and embedded).

The same slots, back-off and recycling as forked children (``children.Children``),
with a thread in each slot instead of a fork. Each thread runs a whole process object
(a worker, a dispatcher, the scheduler): it registers its own row, beats its own
heartbeat and stops gracefully as a forked child does. What differs:

- a child that crashes (an exception out of its loop) is started again in place: a
  new thread, in the same process;
- TERM and QUIT are calls (``stop()``, ``quit()``) rather than signals;
- a thread that does not stop after QUIT cannot be killed: its row is removed and its
  jobs failed, as for a killed fork, and the thread is left to end with the process;
- a hard crash of the process (SIGKILL, out of memory) takes every thread with it:
  their jobs stay claimed until another supervisor's prune fails them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field

from ..models import Process
from .children import Children, Fork
from .errors import ProcessExitError
from .interruptible import Interruptible
from .poller import Poller
from .worker import Worker
from .worker.recycling import EXIT_STATUSES

logger = logging.getLogger("steady_queue.processes")


@dataclass
class ThreadFork(Fork):
    thread: threading.Thread | None = None
    code: int = 0
    crash: BaseException | None = field(default=None, repr=False)


class ThreadChildren(Children):
    """Run each of the supervisor's children in a thread; ``forks`` is keyed by thread id."""

    def start(self, slot: int, supervisor: Process, parent: Interruptible) -> None:
        """Start the process of ``slot`` in a new thread."""
        process = self.factories[slot]()
        process.supervised_by(supervisor, None)  # no parent pid to watch: we share one
        process.in_thread = True
        if slot in self._replaced and isinstance(process, Worker):
            process.replaced = self._replaced.pop(slot)
        fork = ThreadFork(process, slot, time.monotonic())
        fork.thread = threading.Thread(
            target=_run, args=(fork, parent), name=process.name, daemon=True
        )
        fork.thread.start()
        self.forks[fork.thread.ident] = fork
        logger.info("Started %s %s in a thread", process.kind, process.name)

    def reap(self, *, stopping: bool) -> None:
        """Collect every thread that ended; unless ``stopping``, schedule its restart."""
        for ident, fork in list(self.forks.items()):
            if not fork.thread.is_alive():
                del self.forks[ident]
                self.ended(fork, stopping=stopping)

    def ended(self, fork: ThreadFork, *, stopping: bool) -> None:
        """Record the end of ``fork``'s thread: a recycling, a clean stop or a crash."""
        process = fork.process
        if self._recycled(fork) and not stopping:
            self._replace_recycled(fork, fork.thread.ident, fork.code)
            return
        error = None
        if fork.crash is not None:
            error = ProcessExitError(
                f"Process {process.name} (a thread of pid {os.getpid()}) crashed: {fork.crash!r}"
            )
        log = logger.info if error is None or stopping else logger.warning
        log("%s %s ended%s", process.kind, process.name, f": {error}" if error else "")
        self.exited.append((process.name, error))
        if not stopping:
            self._schedule_restart(fork)

    def signal_all(self, signum: int) -> None:
        """TERM (or INT): stop each child gracefully; QUIT: stop each now."""
        for fork in self.forks.values():
            if signum == signal.SIGQUIT:
                fork.process.quit()
            else:
                fork.process.stop()

    def kill_remaining(self, *, stopping: bool) -> None:
        """Give up on threads still running after QUIT: their jobs fail, as a killed fork's."""
        for ident, fork in list(self.forks.items()):
            del self.forks[ident]
            logger.error("%s did not stop after QUIT; failing its jobs", fork.process)
            error = ProcessExitError(f"Process {fork.process.name} did not stop after QUIT")
            self.exited.append((fork.process.name, error))

    @staticmethod
    def _recycled(fork: ThreadFork) -> bool:
        return (
            isinstance(fork.process, Worker) and fork.crash is None and fork.code in EXIT_STATUSES
        )


def _run(fork: ThreadFork, parent: Interruptible) -> None:
    process: Poller = fork.process
    try:
        fork.code = process.start()
    except BaseException as exc:
        fork.crash = exc
        logger.exception("%s crashed", process)
    finally:
        # Its wake-up pipe stays open: a straggler thread of its (a stuck job's) may
        # still write to it, and a closed descriptor could be reused by then.
        parent.wake_up()  # the supervisor reaps this thread and starts another now
