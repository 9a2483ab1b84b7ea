"""A running job's log: what its task emits through ``logging`` (and ``print``), kept.

``capture(job)`` wraps a run's call: it makes the run current in a context variable
(``contextvars``, so that an ``async def`` task on a worker's event loop, whose steps
share one context, is told apart from the others on the same thread) and registers it
with the worker (``running``: its thread, its asyncio task, for ``live_stack``). The
handler that ``install`` puts on the root logger, and the print tee on
``sys.stdout``/``sys.stderr``, add each line to the current run's buffer in memory:
no query per line. The buffers are written in one batch by the worker's loop every
``steady_queue.job_log_flush_interval`` (``flush_due``) and by the run at its end.

Each attempt keeps its newest ``job_log_max_lines`` lines and ``job_log_max_bytes``
bytes of messages; the buffer knows which lines fell out and deletes them with the
next write (``JobLogLine``'s numbering says how many came before the first kept).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import CodeType
from typing import Any

from django.db.models import Q

import steady_queue

from .. import db, encryption
from ..configuration import seconds
from ..models.attempt import storable
from ..models.run_log import LOGGER_LENGTH, JobLogLine
from ..task_options import transactional

logger = logging.getLogger("steady_queue.processes")

#: The logger name of lines the task printed (``sys.stdout``, ``sys.stderr``).
PRINT_LOGGERS = {"stdout": "print", "stderr": "print.stderr"}

_current: contextvars.ContextVar[RunLog | None] = contextvars.ContextVar(
    "steady_queue_run_log", default=None
)
_lock = threading.Lock()
_running: dict[int, RunLog] = {}  # job id -> its run, while its call runs
# One write at a time: a run's delete past its cap must not pass its insert in another.
_writing = threading.Lock()


@dataclasses.dataclass(eq=False)
class RunLog:
    """One run's buffer of lines not written yet, and where the run is (for its stack)."""

    job_id: int
    attempt: int
    code: CodeType | None  # the task function's, where its stack starts
    sealed: bool = False  # an encrypted task's run: each line is stored sealed
    thread: int = dataclasses.field(default_factory=threading.get_ident)
    task: asyncio.Task | None = None  # an async task's, on a worker's event loop
    _pending: collections.deque = dataclasses.field(default_factory=collections.deque)
    _kept: collections.deque = dataclasses.field(default_factory=collections.deque)
    _kept_bytes: int = 0
    _next: int = 1
    _dropped: int = 0  # lines numbered up to this one are to be deleted
    _dropped_written: int = 0  # lines up to this one were deleted (or never written)
    _written: int = 0  # lines up to this one were written
    _partial: dict[str, str] = dataclasses.field(default_factory=dict)  # printed, no newline yet
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def add(self, level: int, name: str, message: str) -> None:
        """Keep one line; past the caps, the oldest lines kept are marked to be deleted.

        Only a tuple on the task's thread: the row is built when the line is written.
        """
        size = len(message.encode("utf-8", "backslashreplace"))
        with self._lock:
            self._pending.append((self._next, time.time(), level, name, message))
            self._kept.append((self._next, size))
            self._next += 1
            self._kept_bytes += size
            self._drop_past_caps()

    def printed(self, stream: str, text: str) -> None:
        """Keep what the task printed, a line at a time (the rest waits for its newline)."""
        *lines, rest = (self._partial.pop(stream, "") + text).split("\n")
        if len(rest) > steady_queue.job_log_max_bytes:  # no newline for that long: a line
            lines.append(rest)
        elif rest:
            self._partial[stream] = rest
        for line in lines:
            self.add(logging.INFO, PRINT_LOGGERS[stream], line)

    def take(self) -> tuple[list[JobLogLine], int | None]:
        """The lines to insert, and the last number to delete (None: none) since the last take."""
        with self._lock:
            pending, self._pending = list(self._pending), collections.deque()
            # Only lines already written are deleted; those never written were skipped.
            upto = min(self._dropped, self._written)
            dropped = upto if upto > self._dropped_written else None
            self._dropped_written = self._dropped
            if pending:
                self._written = pending[-1][0]
        return [self._row(*line) for line in pending], dropped

    def _row(self, number: int, at: float, level: int, name: str, message: str) -> JobLogLine:
        return JobLogLine(
            job_id=self.job_id,
            attempt=self.attempt,
            number=number,
            logged_at=datetime.fromtimestamp(at, UTC),
            level=level,
            logger=name[:LOGGER_LENGTH],
            message=self._stored(storable(message)[: steady_queue.job_log_max_bytes]),
        )

    def _stored(self, message: str) -> str:
        return encryption.seal_text(message) if self.sealed else message

    def _drop_past_caps(self) -> None:
        max_lines, max_bytes = steady_queue.job_log_max_lines, steady_queue.job_log_max_bytes
        while len(self._kept) > 1 and (len(self._kept) > max_lines or self._kept_bytes > max_bytes):
            number, size = self._kept.popleft()
            self._kept_bytes -= size
            self._dropped = number
        # Lines dropped before they were written are forgotten: a run's memory stays capped.
        while self._pending and self._pending[0][0] <= self._dropped:
            self._pending.popleft()


@contextlib.contextmanager
def capture(job: Any, code: CodeType | None = None) -> Iterator[RunLog]:
    """Make ``job``'s run current while its task is called; write its last lines at the end."""
    sealed = encryption.is_encrypted(job.task_path)
    run = RunLog(job_id=job.pk, attempt=len(job.attempts) + 1, code=code, sealed=sealed)
    token = _current.set(run)
    with _lock:
        _running[job.pk] = run
    try:
        yield run
    finally:
        with _lock:
            if _running.get(job.pk) is run:
                del _running[job.pk]
        _forget(token)
        for stream in list(run._partial):
            run.printed(stream, "\n")
        # A @transactional task's: once its transaction ends, so that a rollback keeps them.
        if not transactional.after_transaction(functools.partial(write, [run])):
            write([run])


def attach_task(task: asyncio.Task | None) -> None:
    """Note the current run's asyncio task (called on the loop, in the run's context)."""
    run = _current.get()
    if run is not None:
        run.task = task


def current() -> RunLog | None:
    """The run whose task is being called in this context, if any."""
    return _current.get()


def install() -> None:
    """Capture the running jobs' records and prints, as the settings say (a worker's boot)."""
    from . import log_capture

    log_capture.install()


def uninstall() -> None:
    """Undo ``install`` (tests)."""
    from . import log_capture

    log_capture.uninstall()


def running(job_id: int) -> RunLog | None:
    """The run of ``job_id`` in this process, if its task is being called."""
    with _lock:
        return _running.get(job_id)


def write(runs: list[RunLog] | None = None) -> int:
    """Write the lines the ``runs`` (every run: None) logged since the last write; how many.

    One insert for every run, and one delete for the lines past the caps. A run whose
    job is gone meanwhile (discarded) loses its lines, not the others'.
    """
    if runs is None:
        with _lock:
            runs = list(_running.values())
    with _writing:
        taken = [(run, *run.take()) for run in runs]
        taken = [(run, lines, dropped) for run, lines, dropped in taken if lines or dropped]
        if not taken:
            return 0
        try:
            _write(taken)
        except Exception:
            for one in taken:
                _write_alone(one)
    return sum(len(lines) for _run, lines, _dropped in taken)


class Flushes:
    """When a worker's loop writes its runs' lines: every ``job_log_flush_interval``."""

    def __init__(self) -> None:
        self._next = time.monotonic()

    def due(self) -> float:
        """Write if it is time; return the seconds until the next time."""
        interval = seconds(steady_queue.job_log_flush_interval)
        now = time.monotonic()
        if now >= self._next:
            self._next = now + interval
            try:
                write()
            except Exception as exc:  # the worker's loop goes on; the lines were dropped
                logger.warning("Writing the running jobs' log lines failed: %s", exc)
        return max(0.0, self._next - now)


def _forget(token: contextvars.Token) -> None:
    try:
        _current.reset(token)
    except ValueError:  # ended in another context than it began (a generator closed late)
        _current.set(None)


def _write(taken: list[tuple[RunLog, list[JobLogLine], int | None]]) -> None:
    lines = [line for _run, run_lines, _dropped in taken for line in run_lines]
    gone = Q()
    for run, _lines, dropped in taken:
        if dropped is not None:
            gone |= Q(job_id=run.job_id, attempt=run.attempt, number__lte=dropped)
    if not gone:
        JobLogLine.objects.bulk_create(lines)
        return
    with db.atomic():  # the lines past the cap go as the new ones come
        JobLogLine.objects.bulk_create(lines)
        JobLogLine.objects.filter(gone).delete()


def _write_alone(one: tuple[RunLog, list[JobLogLine], int | None]) -> None:
    try:
        _write([one])
    except Exception as exc:
        logger.debug("The log lines of job %s were not written: %s", one[0].job_id, exc)
