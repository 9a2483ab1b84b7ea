"""Paused tasks: workers start no job of a paused task, on any queue, until it resumes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from django.db import models
from django.utils import timezone

from .. import db
from .base import QueueModel

#: How long a process trusts what it last read of the paused tasks, to choose an
#: enqueue's path (``seems_paused``); never to decide whether a job may start.
HINT_SECONDS = 1.0


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
            paths = frozenset(TaskPause.objects.using(alias).values_list("task_path", flat=True))
            with self._lock:
                self._read[alias] = (time.monotonic(), paths)
        return paths

    def clear(self) -> None:
        with self._lock:
            self._read.clear()


_hint = _Hint()
