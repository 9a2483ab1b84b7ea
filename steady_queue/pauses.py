"""Pause a task: its jobs wait, on every queue, until it resumes.

``pause_task("app.tasks.export")`` (or the task object) stops workers from starting jobs
of that task; enqueueing still works, and its jobs wait as ``paused`` (not blocked, no
attempt counted) until ``resume_task``, when they run in their original order. Queue
pauses (``Queue.pause``) stop a whole queue; a task pause stops one task everywhere.
Each call acts on the queue database of the current backend (``steady_queue.database``,
or the one ``db.using_alias`` chose). See docs/reference/task-pauses.md.
"""

from __future__ import annotations

from django.utils.module_loading import import_string

from .compat import Task
from .exceptions import TaskPauseError

__all__ = ["TaskPauseError", "pause_task", "paused_tasks", "resume_task"]


def pause_task(task: Task | str) -> int:
    """Pause ``task`` (a Task or its dotted path); return how many ready jobs now wait.

    Once it returns, no job of the task starts until it is resumed, except those a
    worker had claimed already. Pausing a paused task changes nothing.
    """
    from .models import PausedExecution

    return PausedExecution.pause_task(task_path_of(task))


def resume_task(task: Task | str) -> int:
    """Resume ``task``: its paused jobs become ready, in their order; return how many.

    A paused task whose code is gone can still be resumed by its path. Resuming a task
    that is not paused changes nothing and returns 0.
    """
    from .models import PausedExecution, TaskPause

    gone = isinstance(task, str) and _plain(task)
    if not (gone and TaskPause.objects.filter(task_path=task).exists()):
        task = task_path_of(task)
    return PausedExecution.resume_task(task)


def paused_tasks() -> list[str]:
    """The dotted paths of the paused tasks, sorted."""
    from .models import TaskPause

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
