"""``manage.py steady_queue_queues weight KEY WEIGHT [--task PATH]`` and ``weight KEY
--clear``: a fairness key's weight set at runtime, or cleared.

Like a pause: a dry run (saying the weight now and the one it would be) until ``--yes``;
real runs are audited as the OS user. A weight that is no whole number of 1 or more, a
task that is not fair, or a key too long for its column is refused (exit status 2)
with nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.management.base import CommandError

from ..models import FairWeight
from ..models.fair_weight import ALL_TASKS
from ..task_options.fairness import fairness_for
from . import audit, backends
from .fair_share import clear_weight, set_weight

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

KEY_LENGTH = 255
MAX_WEIGHT = 1_000_000


def add_arguments(parser) -> None:
    parser.add_argument(
        "--task", default=None, help="weight: the fair task it applies to (default: every one)."
    )
    parser.add_argument("--clear", action="store_true", help="weight: clear the key's weight.")


def run(command: BaseCommand, key: str | None, value: str | None, options: dict) -> None:
    """Set (or with ``--clear`` clear) the weight of ``key`` for ``command``."""
    task, clearing, really = options["task"], options["clear"], options["yes"]
    _check(key, value, task, clearing)
    current = FairWeight.objects.filter(task_path=task or ALL_TASKS, key=key).first()
    where = f"task {task}" if task else "every fair task"
    if clearing:
        _clear(command, key, task, where, current, really)
    else:
        _set(command, key, int(value), task, where, current, really)


def list_weights(command: BaseCommand) -> None:
    """The weights set at runtime, after the queues (nothing when none is)."""
    for row in FairWeight.objects.order_by("key", "task_path"):
        where = f"task {row.task_path}" if row.task_path else "every fair task"
        command.stdout.write(f"Fairness key {row.key} weighs {row.weight} in {where}.")


def _check(key: str | None, value: str | None, task: str | None, clearing: bool) -> None:
    if not key:
        _refuse("weight needs a fairness key: weight KEY WEIGHT, or weight KEY --clear.")
    if len(key) > KEY_LENGTH or "\x00" in key:
        _refuse(f"No fairness key is longer than {KEY_LENGTH} characters or holds a NUL.")
    if task is not None and ("\x00" in task or fairness_for(task) is None):
        _refuse(f"{task} is not a fair task (one declared with @fair).")
    if clearing:
        if value is not None:
            _refuse("weight KEY --clear takes no weight.")
        return
    if value is None or not value.strip().isdecimal() or not 1 <= int(value) <= MAX_WEIGHT:
        _refuse(f"A weight is a whole number from 1 to {MAX_WEIGHT:,}, not {value!r}.")


def _refuse(message: str) -> None:
    raise CommandError(message, returncode=backends.USAGE_ERROR)


def _set(command, key: str, weight: int, task, where: str, current, really: bool) -> None:
    now = f"{current.weight}, set at runtime" if current else "its task's declared weight"
    if not really:
        command.stdout.write(
            f"Dry run: would set the weight of fairness key {key} in {where} to {weight} "
            f"(now: {now}).\nNothing was changed. Run again with --yes to set it."
        )
        return
    moved = set_weight(key, weight, task=task)
    _done(command, f"Fairness key {key} now weighs {weight} in {where} (was: {now}).", moved)


def _clear(command, key: str, task, where: str, current, really: bool) -> None:
    if current is None:
        command.stdout.write(f"No weight is set for fairness key {key} in {where}.")
        return
    if not really:
        command.stdout.write(
            f"Dry run: would clear the weight of fairness key {key} in {where} (now: "
            f"{current.weight}); its task's declared weight would apply again.\n"
            "Nothing was changed. Run again with --yes to clear it."
        )
        return
    moved = clear_weight(key, task=task)
    message = (
        f"Fairness key {key} weighs what its task declares again in {where} "
        f"(was: {current.weight})."
    )
    _done(command, message, moved)


def _done(command: BaseCommand, message: str, moved: int) -> None:
    """Say what was done; ``set_weight`` / ``clear_weight`` wrote the audit entry."""
    if command.target.explicit:
        message = f"{message} (backend {command.target.backend})"
    command.stdout.write(f"{message} {moved:,} ready job{'' if moved == 1 else 's'} moved.")
    if audit.available():
        command.stdout.write(f"Recorded in the audit log as {audit.actor()}.")
    else:
        command.stdout.write("The dashboard app is not installed: no audit entry was written.")
