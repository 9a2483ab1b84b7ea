"""Per-task timeouts: ``@timeout(timedelta(seconds=30))`` above ``@task``.

    from steady_queue.task_options.timeouts import timeout

    @timeout(timedelta(seconds=30))      # or, on Django 6.1+, @task(timeout=timedelta(seconds=30))
    @task()
    def render_report(report_id): ...

A run that exceeds its timeout fails with ``steady_queue.exceptions.JobTimeout`` and
follows the task's retry policy; ``steady_queue.runner.deadlines`` enforces it. Tasks without
one get ``steady_queue.default_timeout`` (None: no timeout).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import steady_queue

from ..compat import Task
from . import TaskOptions

_registry: TaskOptions[timedelta] = TaskOptions()


def timeout(duration: timedelta | float | int) -> Callable[[Task], Task]:
    """Fail a run of the task that takes longer than ``duration`` with JobTimeout."""
    checked = checked_timeout(duration, "@timeout()")

    def decorate(task: Task) -> Task:
        _registry.register(task, checked)
        return task

    return decorate


def checked_timeout(duration: object, where: str) -> timedelta:
    """``duration`` as a positive timedelta, or a ValueError that says what is wrong."""
    if isinstance(duration, bool) or not isinstance(duration, timedelta | int | float):
        raise TypeError(f"{where} needs a timedelta or a number of seconds, not {duration!r}.")
    value = duration if isinstance(duration, timedelta) else timedelta(seconds=duration)
    if value <= timedelta(0):
        raise ValueError(f"{where} needs a positive duration, not {duration!r}.")
    return value


def register(task: Task, duration: object) -> None:
    """Declare the timeout given as ``@task(timeout=...)`` (Django 6.1+)."""
    _registry.register(task, checked_timeout(duration, f"@task(timeout=...) of {task.name}"))


def seconds_for(task_path: str) -> float | None:
    """The timeout of the task at ``task_path`` in seconds, its own or the default."""
    declared = _registry.get(task_path) or steady_queue.default_timeout
    return declared.total_seconds() if declared is not None else None
