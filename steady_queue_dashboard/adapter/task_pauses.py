"""Task pauses through the engine's ``steady_queue.pauses``: which tasks are paused,
what a pause would hold back, and pausing and resuming."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from steady_queue import pauses
from steady_queue.models import ReadyExecution, TaskPause

from .actions import Outcome


def paused_tasks() -> list[str]:
    """The dotted paths of the paused tasks, sorted (one query)."""
    return pauses.paused_tasks()


def task_pause_check(task_path: str, *, resuming: bool = False) -> str | None:
    """Why ``task_path`` cannot be paused (or resumed): a message; None when it can.

    A paused task whose code is gone can still be resumed by its path.
    """
    if resuming and is_paused(task_path):
        return None
    try:
        pauses.task_path_of(task_path)
    except pauses.TaskPauseError as exc:
        return str(exc)
    return None


def is_paused(task_path: str) -> bool:
    if "\x00" in task_path or len(task_path) > 255:
        return False  # no database stores it (PostgreSQL refuses to compare it)
    return TaskPause.objects.filter(task_path=task_path).exists()


def ready_count(task_path: str) -> int:
    """How many ready jobs of ``task_path`` a pause would hold back."""
    return ReadyExecution.objects.filter(job__task_path=task_path).count()


def pause_task(task_path: str) -> Outcome:
    moved = pauses.pause_task(task_path)
    message = ngettext(
        "Task %(task)s is paused: %(count)d job waits; workers start none of its jobs.",
        "Task %(task)s is paused: %(count)d jobs wait; workers start none of its jobs.",
        moved,
    ) % {"task": task_path, "count": moved}
    return Outcome(True, message, moved)


def resume_task(task_path: str) -> Outcome:
    if not is_paused(task_path):
        return Outcome(False, _("Task %(task)s is not paused.") % {"task": task_path})
    moved = pauses.resume_task(task_path)
    message = ngettext(
        "Task %(task)s is running again: %(count)d job is ready.",
        "Task %(task)s is running again: %(count)d jobs are ready.",
        moved,
    ) % {"task": task_path, "count": moved}
    return Outcome(True, message, moved)
