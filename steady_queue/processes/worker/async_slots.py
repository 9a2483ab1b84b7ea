"""A worker's event loop: ``async def`` jobs run on it many at a time, in a thread of its own.

A worker with ``async_concurrency`` N runs up to N async jobs at once on one asyncio
loop. The loop runs nothing but the tasks' coroutines: each job's steps before and
after its call (``perform.performing``: the signals, the rate limit's admission, the
finish that records the outcome through ``ClaimedExecution.record``) run on a few
helper threads with their own database connections, so the loop never waits for the
database. A job's steps and its coroutine share one ``contextvars.Context``: its span
(tracing) is current while the coroutine runs, and entered on one thread at a time.

Timeouts are the coroutine's own (``asyncio.timeout``, see ``deadlines.with_timeout``).
The watchdog knows each run, with an ``interrupt`` that cancels its asyncio task
(cancellation past its grace, or a timeout the coroutine did not stop at); a run that
still does not stop (a coroutine blocking the loop in C code) has its job ended by the
watchdog, and its slot stays taken until the coroutine returns, if it ever does.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from ... import storage
from ...configuration import ASYNC_HELPER_THREADS
from ...exceptions import JobCancelled
from ...models import ClaimedExecution
from ...runner import calling, deadlines, perform, run_logs
from .async_claims import ClaimRoom
from .pool import Pool
from .unrecorded import end_unrecorded

logger = logging.getLogger("steady_queue.processes")


@dataclasses.dataclass(eq=False)
class _Entry:
    """One async job in a slot, from its claim to its finish."""

    claimed: ClaimedExecution
    steps: calling.Run
    context: contextvars.Context
    call: calling.Call | None = None
    task: asyncio.Task | None = None
    interrupted: type[BaseException] | None = None  # JobTimeout or JobCancelled
    outcome: tuple[bool, Any] | None = None  # (returned, its value or what it raised)
    abandoned: bool = False  # the watchdog ended the job; the coroutine still runs


class AsyncSlots:
    """``size`` slots for async jobs on one event loop; ``submit(claimed)`` fills one.

    ``on_end(claimed, finished, worth_a_poll)`` is called (on a helper thread) once a
    job has left its slot: ``finished`` is what its finish did, None if recording it
    raised; ``worth_a_poll`` once a tenth of the slots (at least one) are free again:
    waking the worker at every end would cost a claim each, and most find nothing.
    """

    def __init__(
        self,
        size: int,
        *,
        on_end: Callable[[ClaimedExecution, storage.Finished | None, bool], None],
        name: str = "worker",
    ):
        self.size = size
        self.name = name
        self._on_end = on_end
        self._poll_at = max(1, size // 10)  # free slots
        self._lock = threading.Lock()
        self._entries: dict[int, _Entry] = {}  # job id -> its entry, while in a slot
        self._helpers = Pool(ASYNC_HELPER_THREADS, on_idle=lambda: None, name=f"{name}-async")
        self.claims = ClaimRoom(size)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def of(cls, size: int | None, **options) -> AsyncSlots | None:
        """The slots of a worker with ``async_concurrency`` ``size`` (None: it has none)."""
        return cls(size, **options) if size else None

    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=f"{self.name}-loop", daemon=True)
        self._thread.start()
        self._helpers.start()

    def _serve(self) -> None:
        try:
            self.loop.run_forever()
        finally:
            # Runs still pending are left as they are: their claims go back to the queue
            # with the worker's (cancelling them would record them as failed).
            self.loop.close()

    def shutdown(self) -> None:
        """Stop the loop and the helpers; what still runs is abandoned (its claim stays)."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._helpers.shutdown()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the helpers (and their connections) to end."""
        self._helpers.join(timeout)

    @property
    def thread_id(self) -> int | None:
        return self._thread.ident if self._thread is not None else None

    @property
    def free_slots(self) -> int:
        with self._lock:
            return self.size - len(self._entries)

    @property
    def running_job_ids(self) -> set[int]:
        """Jobs in a slot whose end is not recorded yet (the abandoned ones have ended)."""
        with self._lock:
            return {job_id for job_id, entry in self._entries.items() if not entry.abandoned}

    def claim_room(self) -> int:
        """How many jobs a poll claims for the free slots (see ``ClaimRoom``)."""
        return self.claims.room(self.free_slots)

    def probe_delay(self, otherwise: float) -> float:
        """How long a worker with nothing to claim may wait (see ``ClaimRoom``)."""
        return self.claims.probe_delay(self.free_slots, otherwise)

    def submit(self, claimed: ClaimedExecution) -> bool:
        """Run ``claimed`` (an async task's job) in a free slot; False if none is free."""
        entry = _Entry(claimed, perform.performing(claimed), contextvars.copy_context())
        with self._lock:
            if len(self._entries) >= self.size:
                return False
            self._entries[claimed.job_id] = entry
        self.claims.found(1)
        self._helpers.submit(functools.partial(self._begin, entry))
        return True

    def abandon(self, run: deadlines.Run) -> bool:
        """The watchdog ended ``run``'s job for it: whether the run was one of ours."""
        if run.thread != self.thread_id:
            return False
        with self._lock:
            entry = self._entries.get(run.claimed.job_id)
            if entry is not None:
                entry.abandoned = True
        return entry is not None

    def stuck(self) -> bool:
        """Whether a run whose job the watchdog ended is still on the loop."""
        with self._lock:
            return any(entry.abandoned for entry in self._entries.values())

    # On a helper thread: the steps before the call, and after it.

    def _begin(self, entry: _Entry) -> None:
        try:
            call = entry.context.run(next, entry.steps)
        except StopIteration as ended:  # it ended before its call (lost, throttled, failed)
            self._ended(entry, ended.value[1])
            return
        except BaseException as exc:
            self._could_not_record(entry, exc)
            return
        if not call.is_async:  # not an async task after all: call it here
            try:
                entry.outcome = (True, call.run())
            except BaseException as exc:
                entry.outcome = (False, exc)
            self._end(entry)
            return
        entry.call = call
        self.loop.call_soon_threadsafe(self._start, entry)

    def _end(self, entry: _Entry) -> None:
        returned, value = entry.outcome or (False, asyncio.CancelledError())
        step = entry.steps.send if returned else entry.steps.throw
        try:
            entry.context.run(step, value)
        except StopIteration as ended:
            self._ended(entry, ended.value[1])
            return
        except BaseException as exc:
            self._could_not_record(entry, exc)
            return
        entry.steps.close()  # a run yields once: this is a bug
        logger.error("The run of job %s asked for a second call", entry.claimed.job_id)
        self._ended(entry, None)

    def _could_not_record(self, entry: _Entry, exc: BaseException) -> None:
        # perform ends the job with whatever its task raised; this is about recording it.
        ended = end_unrecorded(entry.claimed, exc, self.name)
        self._ended(entry, storage.Finished(False) if ended else None)

    def _ended(self, entry: _Entry, finished: storage.Finished | None) -> None:
        with self._lock:
            self._entries.pop(entry.claimed.job_id, None)
            free = self.size - len(self._entries)
        self._on_end(entry.claimed, finished, free == self._poll_at)

    # On the loop.

    def _start(self, entry: _Entry) -> None:
        entry.task = self.loop.create_task(self._calling(entry), context=entry.context)
        entry.task.add_done_callback(
            lambda _: self._helpers.submit(functools.partial(self._end, entry))
        )

    async def _calling(self, entry: _Entry) -> None:
        """Await the task's coroutine; keep what it returned or raised in ``entry.outcome``."""
        call = entry.call
        run_logs.attach_task(asyncio.current_task())  # where its live stack is read
        interrupt = functools.partial(self._interrupt_from_thread, entry)
        run = deadlines.watchdog().watch(
            call.claimed,
            call.seconds,
            interruptible=False,
            end_job=calling.end_stuck,
            interrupt=interrupt,
        )
        try:
            coroutine = call.coroutine()
            if call.seconds is not None:
                coroutine = deadlines.with_timeout(coroutine, call.seconds, call.claimed.job_id)
            entry.outcome = (True, await coroutine)
        except asyncio.CancelledError as exc:
            entry.outcome = (False, _interrupted(entry, run, exc))
        except BaseException as exc:
            entry.outcome = (False, exc)
        finally:
            deadlines.stop_watching(run)

    def _interrupt_from_thread(self, entry: _Entry, error: type[BaseException]) -> None:
        self.loop.call_soon_threadsafe(self._interrupt, entry, error)

    def _interrupt(self, entry: _Entry, error: type[BaseException]) -> None:
        if entry.task is not None and not entry.task.done() and entry.interrupted is None:
            entry.interrupted = error
            entry.task.cancel()


def _interrupted(entry: _Entry, run: deadlines.Run, exc: asyncio.CancelledError) -> BaseException:
    """What a cancelled coroutine ends with: the watchdog's interrupt, else its own error."""
    if entry.interrupted is None:
        return exc  # the task's own CancelledError
    if entry.interrupted is JobCancelled:
        error: BaseException = deadlines.cancel_error(run)
    else:
        error = deadlines.timeout_error(run)
    error.__cause__ = exc
    return error
