"""Wait for a job to end: ``steady_queue.wait(result)``, ``steady_queue.await_result(result)``.

A job has ended once it succeeded or failed for good (a cancelled job failed); a job
waiting for a retry has not. On PostgreSQL the waiter LISTENs on a connection of its
own and takes a lock that tells the job's end someone waits (``storage.notify``): the
end's NOTIFY wakes it within milliseconds, and an end nobody waits for sends none.
Elsewhere, or when the queue database cannot be listened on (``listen_database``),
it polls: after 10 ms, then twice as long each time, up to 0.5 s.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from . import db, ours
from .compat import DEFAULT_TASK_BACKEND_ALIAS, TaskResult, TaskResultDoesNotExist, task_backends
from .storage import notify

if TYPE_CHECKING:
    from .backend import SteadyQueueBackend

FIRST_POLL = 0.01
MAX_POLL = 0.5
# Listening, the notification wakes the waiter: a poll only covers a connection lost.
LISTENING_POLL = 5.0


def wait(
    result: TaskResult | str,
    timeout: float | None = None,
    *,
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
) -> TaskResult:
    """Return ``result`` read afresh once its job has ended; raise TimeoutError after ``timeout``.

    ``result`` is a TaskResult, or a result id of ``backend``. ``timeout`` is in seconds
    (None: wait as long as it takes). Raises the backend's TaskResultDoesNotExist if the
    job is gone (discarded, or a success deleted as ``preserve_finished_jobs = False``
    has it). Call it outside a transaction: one that keeps its snapshot never sees the end.
    """
    return _wait(result, timeout, backend, abandoned=threading.Event())


async def await_result(
    result: TaskResult | str,
    timeout: float | None = None,
    *,
    backend: str = DEFAULT_TASK_BACKEND_ALIAS,
) -> TaskResult:
    """Await ``result``'s end as ``wait`` does, in a thread: the event loop runs on."""
    abandoned = threading.Event()
    waiting = sync_to_async(_wait_in_thread, thread_sensitive=False)
    try:
        return await waiting(result, timeout, backend, abandoned)
    finally:
        abandoned.set()  # if the await was cancelled, the thread stops at its next wake-up


class Polling:
    """Sleep between checks: ``FIRST_POLL``, then twice as long each time, up to ``MAX_POLL``."""

    def __init__(self) -> None:
        self.interval = FIRST_POLL

    def sleep(self, limit: float | None) -> None:
        time.sleep(self.interval if limit is None else min(self.interval, limit))
        self.interval = min(self.interval * 2, MAX_POLL)


class Listening:
    """Sleep until PostgreSQL notifies the end of ``job_id`` (or a poll is due).

    The connection LISTENs and holds the waiting lock before the caller's first check,
    so an end that commits after that check always notifies (``notify.wait_for_end``).
    If the connection fails, the waiter polls from then on.
    """

    def __init__(self, job_id: int) -> None:
        self.job_id, self.fallback = str(job_id), None
        self.connection = notify.listening_connection()
        try:
            notify.wait_for_end(self.connection, job_id)
        except BaseException:
            self.close()
            raise

    def sleep(self, limit: float | None) -> None:
        if self.fallback is not None:
            self.fallback.sleep(limit)
            return
        timeout = LISTENING_POLL if limit is None else min(LISTENING_POLL, limit)
        try:
            self._until_notified(timeout)
        except Exception:  # the connection is lost: poll instead, from the start
            self.close()
            self.fallback = Polling()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()  # which also releases the waiting lock

    def _until_notified(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            for notification in self.connection.notifies(timeout=left, stop_after=1):
                if notification.payload in (self.job_id, notify.ANY_JOB):
                    return  # other payloads are other waiters' jobs


@contextlib.contextmanager
def _wake_ups(job_id: int) -> Iterator[Polling | Listening]:
    if not notify.can_listen():
        yield Polling()
        return
    listening = Listening(job_id)
    try:
        yield listening
    finally:
        listening.close()


def _wait(
    result: TaskResult | str, timeout: float | None, backend: str, abandoned: threading.Event
) -> TaskResult:
    owner, result_id = _backend_of(result, backend), str(getattr(result, "id", result))
    deadline = None if timeout is None else time.monotonic() + timeout
    with db.using_alias(owner.database), _wake_ups(_job_id(result_id)) as wake_ups:
        # Abandoned (a cancelled await_result), what it returns goes nowhere.
        while not (fresh := owner.get_result(result_id)).is_finished and not abandoned.is_set():
            wake_ups.sleep(_time_left(deadline, result_id))
        return fresh


def _backend_of(result: TaskResult | str, alias: str) -> SteadyQueueBackend:
    owner = task_backends[getattr(result, "backend", alias)]
    if not ours.is_ours(owner):
        raise TypeError(f"The task backend {owner.alias!r} is not a Steady Queue backend.")
    return owner


def _job_id(result_id: str) -> int:
    try:
        return int(result_id)
    except ValueError as exc:
        raise TaskResultDoesNotExist(result_id) from exc


def _time_left(deadline: float | None, result_id: str) -> float | None:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError(f"Task result {result_id} had not finished in time.")
    return left


def _wait_in_thread(
    result: TaskResult | str, timeout: float | None, backend: str, abandoned: threading.Event
) -> TaskResult:
    try:
        return _wait(result, timeout, backend, abandoned)
    finally:
        close_old_connections()  # this thread's, as at the end of a request
