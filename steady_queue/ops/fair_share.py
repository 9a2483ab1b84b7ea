"""Weights of fairness keys set at run time: ``steady_queue.fairness.set_weight`` and
``clear_weight`` (the public names are there), each audited as an operation.

The tags and the re-spacing of a key's ready jobs are ``models/fair_share.py``; here is
what an operation adds: the key as a job stores it, the task checked, the audit entry.
"""

from __future__ import annotations

from typing import Any

from django.utils.module_loading import import_string

from ..compat import Task
from ..models.fair_share import override_weight
from ..models.fair_weight import ALL_TASKS
from ..task_options import key_text, stored_key
from ..task_options.fairness import READABLE_LENGTH, check_weight, fairness_for
from . import audit


def set_weight(
    key: Any, weight: int, task: Task | str | None = None, *, actor: str | None = None
) -> int:
    """Give ``key`` the weight ``weight`` (in ``task`` only, or in every fair task) until
    ``clear_weight``; its ready jobs move to their new places at once. Returns how many
    ready jobs moved. Audited (``ops.audit``) as ``actor``, by default the OS user."""
    check_weight(weight, "set_weight(weight=...)")
    stored, path = _stored_key(key), _task_path(task)
    moved = override_weight(stored, path, weight)
    _audit(
        "set-fair-weight", stored, path, moved, f"Weight of key {stored!r} set to {weight}.", actor
    )
    return moved


def clear_weight(key: Any, task: Task | str | None = None, *, actor: str | None = None) -> int:
    """Forget the weight ``set_weight`` gave ``key`` (in ``task``, or the one for every
    task): the declared one holds again, for its ready jobs too. Returns how many moved."""
    stored, path = _stored_key(key), _task_path(task)
    moved = override_weight(stored, path, None)
    _audit("clear-fair-weight", stored, path, moved, f"Weight of key {stored!r} cleared.", actor)
    return moved


def _stored_key(key: Any) -> str:
    # As a job of the key stores it (Fairness.key_for): a model instance by model and pk.
    return stored_key(key_text(key), READABLE_LENGTH)


def _task_path(task: Task | str | None) -> str:
    """The dotted path of a fair task (``ALL_TASKS`` for None); else a ValueError."""
    if task is None:
        return ALL_TASKS
    path = task.module_path if isinstance(task, Task) else task
    if not isinstance(path, str) or not path:
        raise TypeError(f"Expected a task or its dotted path, got {task!r}.")
    if not isinstance(task, Task):
        try:
            found = import_string(path)
        except ImportError as exc:
            raise ValueError(f"No task at {path!r}: it does not import.") from exc
        if not isinstance(found, Task):
            raise ValueError(f"{path!r} is not a task.")
    if fairness_for(path) is None:
        raise ValueError(f"Task {path} has no @fair(...): its jobs have no fairness key.")
    return path


def _audit(action: str, key: str, path: str, moved: int, message: str, actor: str | None) -> None:
    details = {"key": key, "task": path or "all tasks", "ready_jobs_moved": moved}
    audit.record(
        action,
        f"fairness key {key}",
        affected=moved,
        succeeded=True,
        message=message,
        details=details,
        link_to=("tasks",),
        as_actor=actor,
    )
