"""Recurring schedules made at run time, for the console's forms: check, preview, save, delete."""

from __future__ import annotations

import json
from typing import Any

from steady_queue import arguments
from steady_queue.models import RecurringTask
from steady_queue.ops import recurring as ops
from steady_queue.ops.recurring import Preview

from .actions import Outcome

__all__ = ["Preview", "delete_schedule", "preview_schedule", "save_schedule", "schedule_values"]


def preview_schedule(key: str, task: str, **fields: Any) -> Preview:
    """Check a schedule as saving it would (``ScheduleError`` if bad); nothing is written."""
    return ops.preview(key, task, **fields)


def save_schedule(preview: Preview) -> Outcome:
    """Store the schedule that ``preview`` showed (create or update by key)."""
    return _outcome(ops.save(preview.recurrence))


def delete_schedule(key: str) -> Outcome:
    return _outcome(ops.delete(key))


def schedule_values(task: RecurringTask) -> dict[str, Any] | None:
    """The edit form's values of ``task``; None when its arguments are not plain JSON."""
    try:
        args, kwargs = arguments.deserialize(task.arguments)
        args_json, kwargs_json = json.dumps(args), json.dumps(kwargs)
    except (arguments.DeserializationError, TypeError, ValueError):
        return None
    catch_up = task.catch_up_window
    return {
        "key": task.key,
        "task": task.task_path,
        "cron": task.schedule,
        "timezone": task.timezone,
        "args": args_json,
        "kwargs": kwargs_json,
        "queue_name": task.queue_name,
        "priority": task.priority,
        "description": task.description,
        "catch_up": int(catch_up.total_seconds()) if catch_up else None,
    }


def _outcome(done: ops.Outcome) -> Outcome:
    return Outcome(done.succeeded, done.message, done.affected)
