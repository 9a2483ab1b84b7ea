"""``manage.py steady_queue_queues pause-task / resume-task``: a task paused on every queue.

Like a queue's pause: ``pause-task`` is a dry run (saying how many ready jobs would
wait) until ``--yes``; ``resume-task`` acts at once; real runs are audited as the OS user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.management.base import CommandError

from .. import pauses
from ..models import ReadyExecution, TaskPause
from . import audit

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

SOURCE = {"source": "manage.py steady_queue_queues"}


def run(command: BaseCommand, action: str, name: str | None, really: bool) -> None:
    """Pause or resume the task ``name`` for ``command`` (its output, its ``target``)."""
    if not name:
        raise CommandError(f"{action} needs the dotted path of a task.")
    paused = TaskPause.objects.filter(task_path=name).exists() if "\x00" not in name else False
    try:
        path = name if (action == "resume-task" and paused) else pauses.task_path_of(name)
    except pauses.TaskPauseError as exc:
        raise CommandError(str(exc)) from exc
    if action == "pause-task":
        _pause(command, path, paused, really)
    else:
        _resume(command, path, paused)


def list_paused(command: BaseCommand) -> None:
    """The paused tasks, after the queues (nothing when none is)."""
    for path in pauses.paused_tasks():
        command.stdout.write(f"Task {path} is paused.")


def _pause(command: BaseCommand, path: str, paused: bool, really: bool) -> None:
    if paused:
        command.stdout.write(f"Task {path} is already paused.")
        return
    if not really:
        ready = ReadyExecution.objects.filter(job__task_path=path).count()
        command.stdout.write(
            f"Dry run: would pause task {path} ({ready:,} ready job{'' if ready == 1 else 's'}): "
            "workers would start none of its jobs, on any queue.\n"
            "Nothing was changed. Run again with --yes to pause it."
        )
        return
    moved = pauses.pause_task(path)
    message = (
        f"Task {path} is paused: {moved:,} job{'' if moved == 1 else 's'} wait; "
        "workers start none of its jobs until it is resumed."
    )
    _done(command, "pause", path, moved, message)


def _resume(command: BaseCommand, path: str, paused: bool) -> None:
    if not paused:
        command.stdout.write(f"Task {path} is not paused.")
        return
    moved = pauses.resume_task(path)
    message = f"Task {path} is running again: {moved:,} job{'' if moved == 1 else 's'} ready."
    _done(command, "resume", path, moved, message)


def _done(command: BaseCommand, action: str, path: str, affected: int, message: str) -> None:
    target = command.target
    if target.explicit:
        message = f"{message} (backend {target.backend})"
    command.stdout.write(message)
    written = audit.record(
        action,
        f"task {path}",
        affected=affected,
        succeeded=True,
        message=message,
        details=SOURCE,
        link_to=("tasks",),
        backend=target,
    )
    if written:
        command.stdout.write(f"Recorded in the audit log as {audit.actor()}.")
    else:
        command.stdout.write("The dashboard app is not installed: no audit entry was written.")
