"""Recurring tasks: ``@recurring`` in code, and ``schedule`` / ``unschedule`` at run time.

A public face: ``@recurring`` and the cron arithmetic live in
``steady_queue.task_options.recurring_task`` (this module's old path), ``schedule`` and
``unschedule`` in ``steady_queue.models.recurring_dynamic``: they store a schedule in the
queue database, where every running scheduler finds it at its next poll. Importing this
module loads the models: import it once Django is set up (in a ``tasks`` module, not in
settings). See docs/reference/runtime-schedules.md.
"""

from __future__ import annotations

from .models.recurring_dynamic import schedule, unschedule
from .task_options.recurring_task import (
    ALIASES,
    CATCH_UP_LIMIT,
    WEEKDAYS,
    Recurrence,
    describe,
    discover,
    in_words,
    next_time,
    next_times,
    recent_times,
    recurring,
    schedule_error,
    timezone_error,
    zone_for,
)

__all__ = [
    "ALIASES",
    "CATCH_UP_LIMIT",
    "WEEKDAYS",
    "Recurrence",
    "describe",
    "discover",
    "in_words",
    "next_time",
    "next_times",
    "recent_times",
    "recurring",
    "schedule",
    "schedule_error",
    "timezone_error",
    "unschedule",
    "zone_for",
]
