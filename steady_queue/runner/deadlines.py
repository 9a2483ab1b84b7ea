"""Enforce task timeouts: interrupt a run when its time is up, end its job if it won't stop.

Over 300 lines: the watchdog thread and the two ways a run is called under it (on a
thread, on an event loop) share the ``Run`` record and the watchdog's one heap.

One watchdog thread per process keeps the deadlines of the runs that have a timeout.
When a run's time is up it raises ``TimeoutInterrupt`` inside the run's thread (an
asynchronous exception, delivered at the thread's next Python instruction): a task
in Python code stops there, its job fails with JobTimeout through the usual path, and
the thread takes its next job. Async tasks are cancelled by ``asyncio.timeout``
instead (``with_timeout``); a run on a worker's event loop is given an ``interrupt``
(it cancels the run's asyncio task) that the watchdog calls instead of raising in a
thread.

The interrupt raised in a thread is ``TimeoutInterrupt``, a ``BaseException``: a task's
``except Exception`` does not swallow it, and one swallowed anyway (a bare ``except``) is
raised again every ``INTERRUPT_WAIT`` while the run goes on. Whatever the task does
with it, the run ends with JobTimeout (an ``Exception``, for the retry policy).

A thread inside a C call (``time.sleep``, a blocking read) does not see the exception
until the call returns. If the run has not ended ``INTERRUPT_WAIT`` after its deadline,
the worker gives the thread up and starts another in its place (``on_abandon``), but
the job keeps its claim: its concurrency slot is not handed on and no retry is made
due while the thread may still run the task. The run records its JobTimeout itself
once the call returns; a worker recycled past ``steady_queue.timeout_grace`` with the
thread still stuck ends the job as it exits (``end_for``), with the thread's stack.
A run on an event loop (``interrupt``) or not interruptible still has its job ended
by the watchdog: nothing of the thread's can be given up there.

The same goes for a running job whose cancellation was asked for and that did not stop
within ``steady_queue.cancel_grace``: the worker asks ``cancel_after``, and the run is
interrupted with ``JobCancelled`` (again while it runs on), failed for good.

Never delivered late: the exception is raised only while the run's task is called,
under a lock the run takes when the call returns, and a pending one is cleared then.

How a job is ended for its run is the runner's (``end_job``, given with each run:
``calling.end_stuck``): this module knows threads and clocks, not the storage.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import heapq
import itertools
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync

from ..exceptions import JobCancelled, JobTimeout, TimeoutInterrupt

if TYPE_CHECKING:
    from ..models import ClaimedExecution

logger = logging.getLogger("steady_queue.perform")

#: Ends the job of a run that did not stop: called with the run's claim, the error it
#: fails with and whether that is final (a cancel: no retry); returns whether this call
#: recorded the end (False: the job had ended already).
EndJob = Callable[["ClaimedExecution", BaseException, bool], bool]

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
    """A run the watchdog knows of: which job, on which thread, under what timeout."""

    claimed: ClaimedExecution
    seconds: float | None
    thread: int
    interruptible: bool
    end_job: EndJob
    #: Called with JobTimeout or JobCancelled instead of raising it in ``thread``.
    interrupt: Callable[[type[BaseException]], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    returned: bool = False
    cancelling: bool = False
    ended: threading.Event = field(default_factory=threading.Event)
    #: JobTimeout or JobCancelled once the watchdog interrupted the run: what it ends with.
    expired: type[BaseException] | None = None
    interrupted_at: float | None = None  # time.monotonic() of the first interrupt
    #: The thread was given up (stuck); the job keeps its claim until the run ends.
    held: bool = False
    stack: str | None = None  # where the thread was when it was given up


@dataclass(order=True)
class _Deadline:
    at: float
    order: int
    run: Run = field(compare=False)
    cancel: bool = field(compare=False)  # False: the run's timeout; True: a cancel's grace


class Watchdog(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="steady-queue-watchdog", daemon=True)
        self._condition = threading.Condition()
        self._heap: list[_Deadline] = []
        self._runs: dict[int, Run] = {}  # job id -> its run, while the task is called
        self._order = itertools.count()
        #: Called with (thread id, run) when a stuck run's job was ended for it.
        self.on_abandon: Callable[[int, Run], None] | None = None

    def watch(
        self,
        claimed: ClaimedExecution,
        seconds: float | None,
        *,
        interruptible: bool,
        end_job: EndJob,
        interrupt: Callable[[type[BaseException]], None] | None = None,
    ) -> Run:
        run = Run(
            claimed=claimed,
            seconds=seconds,
            thread=threading.get_ident(),
            interruptible=interruptible,
            end_job=end_job,
            interrupt=interrupt,
        )
        with self._condition:
            self._runs[claimed.job_id] = run
            if seconds is not None:
                self._push(time.monotonic() + seconds, run, cancel=False)
        return run

    def forget(self, run: Run) -> None:
        with self._condition:
            if self._runs.get(run.claimed.job_id) is run:
                del self._runs[run.claimed.job_id]

    def cancel_after(self, job_id: int, delay: float) -> bool:
        """Interrupt the run of ``job_id`` (cancelled) in ``delay`` seconds, if it still runs."""
        with self._condition:
            run = self._runs.get(job_id)
            if run is None or run.cancelling:
                return False
            run.cancelling = True
            self._push(time.monotonic() + max(delay, 0.0), run, cancel=True)
            return True

    def _push(self, at: float, run: Run, *, cancel: bool) -> None:
        heapq.heappush(self._heap, _Deadline(at, next(self._order), run, cancel))
        self._condition.notify()

    def run(self) -> None:
        while True:
            with self._condition:
                while not self._heap or self._heap[0].at > time.monotonic():
                    if self._heap:
                        self._condition.wait(self._heap[0].at - time.monotonic())
                    else:
                        self._condition.wait()
                due = heapq.heappop(self._heap)
            if not due.run.ended.is_set():
                try:
                    self._expire(due.run, due.cancel)
                except Exception:
                    logger.exception("Could not end job %s in time", due.run.claimed.job_id)

    def _expire(self, run: Run, cancel: bool) -> None:
        if run.interrupt is not None or not run.interruptible:
            self._expire_elsewhere(run, cancel)
            return
        with run.lock:
            if run.returned:
                return
            now = time.monotonic()
            if run.expired is None:
                run.expired, run.interrupted_at = (JobCancelled if cancel else JobTimeout), now
            stuck = not run.held and now - run.interrupted_at >= INTERRUPT_WAIT
            if stuck:
                _give_up(run)
            _raise_in(run.thread, JobCancelled if run.expired is JobCancelled else TimeoutInterrupt)
        if stuck and self.on_abandon is not None:
            self.on_abandon(run.thread, run)
        # Again until the run ends: a swallowed interrupt, or one a C call kept from the
        # thread, comes back at most INTERRUPT_WAIT later.
        with self._condition:
            self._push(time.monotonic() + INTERRUPT_WAIT, run, cancel=cancel)

    def _expire_elsewhere(self, run: Run, cancel: bool) -> None:
        """A run on an event loop (or not interruptible): interrupt it, else end its job."""
        with run.lock:
            if run.returned:
                return
            if run.interrupt is not None:
                run.interrupt(JobCancelled if cancel else JobTimeout)
        if run.ended.wait(INTERRUPT_WAIT):
            return  # it stopped, and records its own failure
        end_for(run, cancel)
        if self.on_abandon is not None:
            self.on_abandon(run.thread, run)


def _give_up(run: Run) -> None:
    frame = sys._current_frames().get(run.thread)
    run.held = True
    run.stack = "".join(traceback.format_stack(frame)) if frame is not None else None
    logger.warning(
        "Job %s did not stop when interrupted; its thread is given up and the job stays "
        "claimed (its slot held, no retry) until the thread stops or the worker exits",
        run.claimed.job_id,
    )


def end_for(run: Run, cancel: bool | None = None) -> None:
    """End the job of a run that did not stop, failed with where its thread was.

    ``cancel`` None: with what it was interrupted for (a timeout unless a cancel).
    """
    from django.db import connections

    cancel = run.expired is JobCancelled if cancel is None else cancel
    exc = _with_stack(cancel_error(run) if cancel else timeout_error(run), run)
    try:
        recorded = run.end_job(run.claimed, exc, cancel)
    finally:
        connections.close_all()  # this thread's own: the watchdog sleeps until its next deadline
    if recorded:
        logger.warning(
            "Job %s did not stop (%s); it failed with %s",
            run.claimed.job_id,
            exc,
            type(exc).__name__,
        )


def _with_stack(exc: BaseException, run: Run) -> BaseException:
    stack = run.stack
    if stack is None and (frame := sys._current_frames().get(run.thread)) is not None:
        stack = "".join(traceback.format_stack(frame))
    if stack is not None:
        exc.add_note("Where the task was:\n" + stack)
    return exc


def timeout_error(run: Run) -> JobTimeout:
    return JobTimeout(f"Job {run.claimed.job_id} ran past its timeout of {run.seconds:g} s")


def cancel_error(run: Run) -> JobCancelled:
    return JobCancelled(f"Job {run.claimed.job_id} was cancelled and did not stop in time")


def call_with_deadline(
    claimed: ClaimedExecution,
    seconds: float | None,
    call: Callable[[], Any],
    *,
    end_job: EndJob,
    interruptible: bool = True,
) -> Any:
    """Run ``call()`` (the task) under a timeout of ``seconds`` (None: none).

    The watchdog knows the run either way, to interrupt it once a cancellation's grace
    is over (``cancel_after``). ``interruptible=False`` (an async task, cancelled by its
    own event loop): the watchdog only ends the job for it if it does not stop.
    """
    run = watchdog().watch(claimed, seconds, interruptible=interruptible, end_job=end_job)
    try:
        value = call()
    except TimeoutInterrupt as exc:
        raise _ended_with(run).with_traceback(exc.__traceback__) from None
    except JobTimeout as exc:
        if not exc.args or exc.args == JobTimeout().args:
            exc.args = timeout_error(run).args  # raised by the watchdog: say which timeout
        raise
    except JobCancelled as exc:
        if not exc.args:
            exc.args = cancel_error(run).args
        raise
    except BaseException as exc:
        if run.expired is not None:  # it swallowed the interrupt, then raised this
            raise _ended_with(run) from exc
        raise
    finally:
        if (delivered := _until_returned(run)) is not None:
            raise _ended_with(run).with_traceback(delivered.__traceback__) from None
    if run.expired is not None:  # it swallowed the interrupt and returned: still too late
        raise _ended_with(run)
    return value


def call_async_with_deadline(
    claimed: ClaimedExecution,
    seconds: float | None,
    call: Callable[[], Any],
    coroutine: Callable[[], Any],
    *,
    end_job: EndJob,
) -> Any:
    """Run an async task on an event loop of its own: ``call()``, or under a timeout of
    ``seconds`` its ``coroutine()`` cancelled by ``asyncio.timeout`` (``with_timeout``).

    Not interruptible by the watchdog (the loop cancels it): the watchdog only ends the
    job for it if it does not stop.
    """
    if seconds is not None:
        bounded = async_to_sync(with_timeout)
        call = functools.partial(bounded, coroutine(), seconds, claimed.job_id)
    return call_with_deadline(claimed, seconds, call, end_job=end_job, interruptible=False)


async def with_timeout(coroutine, seconds: float, job_id: int):
    """Await an async task's ``coroutine``, cancelled (JobTimeout) once ``seconds`` have passed."""
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            return await coroutine
    except TimeoutError as exc:
        if not scope.expired():
            raise  # the task's own TimeoutError, not its timeout
        raise JobTimeout(f"Job {job_id} ran past its timeout of {seconds:g} s") from exc


def _ended_with(run: Run) -> BaseException:
    """What an interrupted run ends with: JobTimeout (or JobCancelled) and, if it was
    given up on, where its thread was stuck."""
    exc = cancel_error(run) if run.expired is JobCancelled else timeout_error(run)
    if run.stack is not None:
        exc.add_note("Where the task was:\n" + run.stack)
    return exc


def stop_watching(run: Run) -> None:
    """The run of an ``interrupt``-ed call (on an event loop) has returned."""
    with run.lock:
        run.returned = True
    run.ended.set()
    watchdog().forget(run)


def _until_returned(run: Run) -> BaseException | None:
    """``_returned``, again if an interrupt lands on its way in (before its own guard):
    unmarked, the run would be interrupted again and again outside its task."""
    delivered: BaseException | None = None
    while True:
        try:
            return _returned(run) or delivered
        except (TimeoutInterrupt, JobCancelled) as exc:
            delivered = exc


def _returned(run: Run) -> BaseException | None:
    """Mark the call returned, so that no interrupt comes later, and clear one pending.

    Returns an interrupt delivered just now (it counts: the run was past its deadline).
    """
    delivered: BaseException | None = None
    while True:
        try:
            with run.lock:
                run.returned = True
                _clear_in(run.thread, None)
            break
        except (TimeoutInterrupt, JobCancelled) as exc:
            delivered = exc
    run.ended.set()
    watchdog().forget(run)
    return delivered


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
