"""Enforce task timeouts: interrupt a run when its time is up, end its job if it won't stop.

One watchdog thread per process keeps the deadlines of the runs that have a timeout.
When a run's time is up it raises ``JobTimeout`` inside the run's thread (an
asynchronous exception, delivered at the thread's next Python instruction): a task
in Python code stops there, its job fails with JobTimeout through the usual path, and
the thread takes its next job. Async tasks are cancelled by ``asyncio.timeout``
instead (see ``perform``).

A thread inside a C call (``time.sleep``, a blocking read) does not see the exception
until the call returns. If the run has not ended ``INTERRUPT_WAIT`` after its deadline,
the watchdog ends the job itself, failed with JobTimeout and the thread's stack as it
was, through ``ClaimedExecution.record`` (whoever takes the claim first records the
outcome: the run's own late outcome then changes nothing). The worker gives the stuck
thread up and starts another in its place (``on_abandon``), and recycles itself if
the stuck thread is still there after ``steady_queue.timeout_grace``.

Never delivered late: the exception is raised only while the run's task is called,
under a lock the run takes when the call returns, and a pending one is cleared then.
"""

from __future__ import annotations

import ctypes
import heapq
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .exceptions import JobTimeout

if TYPE_CHECKING:
    from .models import ClaimedExecution

logger = logging.getLogger("steady_queue.perform")

# How long a run gets to stop by itself once interrupted, before its job is ended for it.
INTERRUPT_WAIT = 0.2

# CPython's PyThreadState_SetAsyncExc, twice: to raise an exception class in a thread,
# and to clear a pending one (NULL, which a py_object argument cannot pass).
_raise_in = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_clear_in = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


@dataclass(eq=False)
class Run:
    """A run under a deadline: which job, on which thread, until when."""

    claimed: ClaimedExecution
    seconds: float
    thread: int
    deadline: float
    interruptible: bool
    lock: threading.Lock = field(default_factory=threading.Lock)
    returned: bool = False
    ended: threading.Event = field(default_factory=threading.Event)

    def __lt__(self, other: Run) -> bool:
        return self.deadline < other.deadline


class Watchdog(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="steady-queue-watchdog", daemon=True)
        self._condition = threading.Condition()
        self._heap: list[Run] = []
        #: Called with (thread id, run) when a stuck run's job was ended for it.
        self.on_abandon: Callable[[int, Run], None] | None = None

    def watch(self, claimed: ClaimedExecution, seconds: float, *, interruptible: bool) -> Run:
        run = Run(
            claimed=claimed,
            seconds=seconds,
            thread=threading.get_ident(),
            deadline=time.monotonic() + seconds,
            interruptible=interruptible,
        )
        with self._condition:
            heapq.heappush(self._heap, run)
            self._condition.notify()
        return run

    def run(self) -> None:
        while True:
            with self._condition:
                while not self._heap or self._heap[0].deadline > time.monotonic():
                    if self._heap:
                        self._condition.wait(self._heap[0].deadline - time.monotonic())
                    else:
                        self._condition.wait()
                due = heapq.heappop(self._heap)
            if not due.ended.is_set():
                try:
                    self._expire(due)
                except Exception:
                    logger.exception("Could not end job %s past its timeout", due.claimed.job_id)

    def _expire(self, run: Run) -> None:
        with run.lock:
            if run.returned:
                return
            if run.interruptible:
                _raise_in(run.thread, JobTimeout)
        if run.ended.wait(INTERRUPT_WAIT):
            return  # it stopped, and records its own failure
        self._end_for(run)

    def _end_for(self, run: Run) -> None:
        from django.db import connections

        from . import storage
        from .models.claimed_finish import Failure

        exc = timeout_error(run)
        frame = sys._current_frames().get(run.thread)
        if frame is not None:
            exc.add_note("Where the task was:\n" + "".join(traceback.format_stack(frame)))
        try:
            finished = storage.for_alias().finish(run.claimed, Failure(exc))
        finally:
            connections.close_all()  # this thread's own: it sleeps until the next deadline
        if finished.recorded:
            logger.warning(
                "Job %s ran past its timeout of %g s and did not stop; it failed with "
                "JobTimeout, its thread is given up",
                run.claimed.job_id,
                run.seconds,
            )
        if self.on_abandon is not None:
            self.on_abandon(run.thread, run)


def timeout_error(run: Run) -> JobTimeout:
    return JobTimeout(f"Job {run.claimed.job_id} ran past its timeout of {run.seconds:g} s")


def call_with_deadline(
    claimed: ClaimedExecution,
    seconds: float,
    call: Callable[[], Any],
    *,
    interruptible: bool = True,
) -> Any:
    """Run ``call()`` (the task) under a deadline of ``seconds``; JobTimeout when it passes.

    ``interruptible=False`` (an async task, cancelled by its own event loop): the
    watchdog only ends the job for it if it has not stopped shortly after the deadline.
    """
    run = watchdog().watch(claimed, seconds, interruptible=interruptible)
    try:
        return call()
    except JobTimeout as exc:
        if not exc.args or exc.args == JobTimeout().args:
            exc.args = timeout_error(run).args  # raised by the watchdog: say which timeout
        raise
    finally:
        _returned(run)


def _returned(run: Run) -> None:
    """Mark the call returned, so that no interrupt comes later, and clear one pending."""
    delivered: JobTimeout | None = None
    while True:
        try:
            with run.lock:
                run.returned = True
                _clear_in(run.thread, None)
            break
        except JobTimeout as exc:  # delivered just now: the call timed out after all
            delivered = exc
    run.ended.set()
    if delivered is not None:
        raise delivered


_watchdog: Watchdog | None = None
_creating = threading.Lock()


def watchdog() -> Watchdog:
    """This process's watchdog, started on first use."""
    global _watchdog
    with _creating:
        if _watchdog is None:
            _watchdog = Watchdog()
            _watchdog.start()
        return _watchdog


def _forget_after_fork() -> None:
    # The parent's thread does not exist in a child: a child starts its own.
    global _watchdog, _creating
    _watchdog, _creating = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
