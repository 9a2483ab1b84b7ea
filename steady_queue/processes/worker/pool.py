"""The worker's threads: each runs the work it is given, one piece at a time."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from ..outages import close_connections, recover_connections

logger = logging.getLogger("steady_queue.processes")


class Pool:
    """``size`` daemon threads; ``submit(work)`` runs ``work()`` on an idle one.

    It knows nothing of jobs or claims (the worker's loop does): a thread is busy from
    ``submit`` until its work returns, then ``on_idle`` is called. A thread keeps its
    database connection from one piece of work to the next (Django connections are per
    thread), recovers it after an outage, and closes it only when the thread ends.
    Daemon threads let a worker exit on QUIT even while a job is still running.
    """

    def __init__(self, size: int, *, on_idle: Callable[[], None], name: str = "worker"):
        self.size = size
        self.name = name
        self._on_idle = on_idle
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._busy = 0
        self._threads: list[threading.Thread] = []
        # Threads given up on (stuck in a job that ran past its timeout): each has been
        # replaced, and leaves the pool once its work returns, if it ever does.
        self._abandoned: set[int] = set()

    def start(self) -> None:
        for index in range(self.size):
            self._start_thread(index)

    @property
    def idle_threads(self) -> int:
        with self._lock:
            return self.size - self._busy

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work()`` on the next idle thread (the caller has seen one idle)."""
        with self._lock:
            self._busy += 1
        self._queue.put(work)

    def abandon(self, ident: int) -> bool:
        """Give up on the busy thread ``ident``: another takes its place now.

        False if it is not one of ours (or was given up on already).
        """
        with self._lock:
            ours = any(thread.ident == ident for thread in self._threads)
            if not ours or ident in self._abandoned:
                return False
            self._abandoned.add(ident)
            self._busy -= 1
            index = len(self._threads)
        self._start_thread(index)
        self._on_idle()
        return True

    def is_abandoned(self, ident: int | None = None) -> bool:
        """Whether the thread ``ident`` (default: the calling one) was given up on."""
        with self._lock:
            return (threading.get_ident() if ident is None else ident) in self._abandoned

    def stuck_threads(self) -> list[threading.Thread]:
        """The given-up threads still running their work."""
        with self._lock:
            return [t for t in self._threads if t.ident in self._abandoned and t.is_alive()]

    def shutdown(self) -> None:
        """Let every thread end once it has finished its current work."""
        for _ in self._threads:
            self._queue.put(None)

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the threads to end (and close their connections)."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0))

    def _start_thread(self, index: int) -> None:
        thread = threading.Thread(
            target=self._work, args=(index,), name=f"{self.name}-{index}", daemon=True
        )
        if index < len(self._threads):
            self._threads[index] = thread
        else:
            self._threads.append(thread)
        thread.start()

    def _work(self, index: int) -> None:
        stopped = False
        try:
            while (work := self._queue.get()) is not None:
                self._run(work)
                if self.is_abandoned():
                    break  # replaced while it was stuck: its replacement carries on
            stopped = True
        except BaseException:
            # The work handles its own errors (a job's end with them); this is a bug.
            logger.exception("Thread %s-%s failed; starting another", self.name, index)
        finally:
            close_connections()
            if not stopped:  # a worker never runs with fewer threads than it says it has
                self._start_thread(index)

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        finally:
            recover_connections()
            with self._lock:
                abandoned = threading.get_ident() in self._abandoned
                if not abandoned:  # an abandoned thread no longer counts as busy
                    self._busy -= 1
            if not abandoned:
                self._on_idle()
