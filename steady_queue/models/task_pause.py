"""Paused tasks: workers start no job of a paused task, on any queue, until it resumes.

``pause_task``, ``resume_task``, ``paused_tasks`` are the public API (``steady_queue.pauses``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from django.db import models
from django.utils import timezone
from django.utils.module_loading import import_string

from .. import db
from ..compat import Task
from ..exceptions import TaskPauseError
from .base import QueueModel

#: How long a process trusts what it last read of the paused tasks (``seems_paused``):
#: to choose an enqueue's path, and whether a run must ask the database before it starts.
HINT_SECONDS = 0.5

#: How long ``pause_task`` waits after its commit before it returns: at least
#: ``HINT_SECONDS``, so that every process's hint has been read after the pause by then.
SETTLE_SECONDS = 0.5


class TaskPause(QueueModel):
    """A paused task (its dotted path): its jobs wait as ``paused`` until the row is deleted.

    Read where a job of any task would become ready (``ReadyExecution.create_all_from_jobs``)
    and as a run starts (``Job.paused_run``); pausing and resuming are
    ``PausedExecution.pause_task`` / ``resume_task``, which move the task's jobs.
    """

    task_path = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "steady_queue_task_pauses"

    def __str__(self) -> str:
        return self.task_path

    @classmethod
    def paused_among(cls, task_paths: Iterable[str]) -> set[str]:
        """Which of ``task_paths`` are paused (one query; none when given none)."""
        task_paths = set(task_paths)
        if not task_paths:
            return set()
        return set(cls.objects.filter(task_path__in=task_paths).values_list("task_path", flat=True))

    @classmethod
    def seems_paused(cls, task_path: str) -> bool:
        """Whether ``task_path`` was paused when this process last looked (at most
        ``HINT_SECONDS`` ago, on this queue database).

        Only a hint, read so that an enqueue costs no query: it chooses the portable
        enqueue, which reads the pauses in its transaction, over a storage's fast path,
        which makes jobs ready without looking. A stale answer costs nothing but time:
        a job made ready while its task is paused is moved to paused by the worker
        that claims it (``Job.paused_run``).
        """
        return task_path in _hint.paths(db.alias())

    @classmethod
    def forget_hint(cls) -> None:
        """Read the pauses again at the next ``seems_paused`` (this process paused or
        resumed a task)."""
        _hint.clear()


class _Hint:
    """The paused tasks of each queue database, as last read by this process."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[float, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def paths(self, alias: str) -> frozenset[str]:
        read_at, paths = self._read.get(alias, (None, frozenset()))
        if read_at is None or time.monotonic() - read_at > HINT_SECONDS:
            # Dated before the query: the answer is at least as new as that moment, which
            # is what pause_task's wait counts on.
            asked_at = time.monotonic()
            paths = frozenset(TaskPause.objects.using(alias).values_list("task_path", flat=True))
            with self._lock:
                self._read[alias] = (asked_at, paths)
        return paths

    def clear(self) -> None:
        with self._lock:
            self._read.clear()


_hint = _Hint()


def pause_task(task: Task | str) -> int:
    """Pause ``task`` (a Task or its dotted path); return how many ready jobs now wait.

    Once it returns, no job of the task starts until it is resumed (runs that had
    started go on). Pausing a paused task changes nothing and returns 0.

    It returns ``SETTLE_SECONDS`` (half a second) after its commit: a run asks the
    database whether its task is paused only when its process's hint (read at most
    ``HINT_SECONDS`` before) says so, which keeps that read off every run's path; after
    the wait every process's hint has seen the pause. Called inside a transaction, the
    promise holds from that transaction's commit plus the same half second.
    """
    from .execution.paused import PausedExecution

    moved = PausedExecution.pause_task(task_path_of(task))
    time.sleep(SETTLE_SECONDS)
    return moved


def resume_task(task: Task | str) -> int:
    """Resume ``task``: its paused jobs become ready, in their order; return how many.

    A paused task whose code is gone can still be resumed by its path. Resuming a task
    that is not paused changes nothing and returns 0.
    """
    from .execution.paused import PausedExecution

    gone = isinstance(task, str) and _plain(task)
    if not (gone and TaskPause.objects.filter(task_path=task).exists()):
        task = task_path_of(task)
    return PausedExecution.resume_task(task)


def paused_tasks() -> list[str]:
    """The dotted paths of the paused tasks, sorted."""
    return sorted(TaskPause.objects.values_list("task_path", flat=True))


def task_path_of(task: Task | str) -> str:
    """The dotted path of ``task`` (a Task, or a path that imports to one); else
    ``TaskPauseError``."""
    if isinstance(task, Task):
        return task.module_path
    if not isinstance(task, str):
        raise TaskPauseError(f"Expected a task or its dotted path, got {type(task).__name__}.")
    if not _plain(task):
        raise TaskPauseError(f"{task!r} is not the dotted path of a task.")
    try:
        found = import_string(task)
    except ImportError as exc:
        raise TaskPauseError(f"No task at {task!r}: it does not import.") from exc
    if not isinstance(found, Task):
        raise TaskPauseError(f"{task!r} is not a task (it is a {type(found).__name__}).")
    if found.module_path != task:
        raise TaskPauseError(f"{task!r} is an alias: the task's path is {found.module_path!r}.")
    return task


def _plain(path: str) -> bool:
    """Whether ``path`` reads as a dotted path (no database refuses to compare it)."""
    return bool(path) and "." in path and "\x00" not in path and path == path.strip()
