"""Declare tasks that the scheduler enqueues on a cron schedule: ``@recurring``.

Schedules use croniter's syntax: five fields, an optional sixth for seconds (last,
as in croniter), and aliases such as ``@hourly``; times are in ``settings.TIME_ZONE``
(see ``cron_times`` for daylight saving time and ``USE_TZ = False``).
The scheduler imports the ``tasks`` module of every installed app to find them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from croniter import CroniterBadDateError, croniter
from django.utils.module_loading import autodiscover_modules

from .compat import Task
from .cron_times import next_time  # noqa: F401  (its import path before cron_times)

# With catch_up, at most this many runs of one task are enqueued at once (the latest
# ones): a long outage of an every-second task must not turn into a flood of jobs.
CATCH_UP_LIMIT = 100

# Every declaration in import order; duplicates are kept so that the check can name them.
_declared: list[Recurrence] = []


@dataclass(frozen=True, kw_only=True)
class Recurrence:
    """One ``@recurring`` declaration: a task, its arguments and its schedule."""

    key: str
    schedule: str
    task: Task
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue_name: str | None = None
    priority: int | None = None
    description: str = ""
    catch_up: timedelta | None = None


def recurring(
    *,
    schedule: str,
    key: str | None = None,
    args: tuple | list = (),
    kwargs: dict[str, Any] | None = None,
    queue_name: str | None = None,
    priority: int | None = None,
    description: str = "",
    catch_up: timedelta | None = None,
) -> Callable[[Task], Task]:
    """Enqueue the task on ``schedule``; stack it to run one task on several schedules.

    ``key`` (default: the task's path) names the schedule and must be unique.
    Without ``catch_up``, runs the scheduler could not enqueue on time (none was up,
    or the database was down) are skipped: when several are due, only the latest is
    enqueued. With it, those less than ``catch_up`` old are enqueued, at most
    ``CATCH_UP_LIMIT`` (the latest ones).
    """

    def decorate(task: Task) -> Task:
        _declared.append(
            Recurrence(
                key=key or task.module_path,
                schedule=schedule,
                task=task,
                args=tuple(args),
                kwargs=dict(kwargs or {}),
                queue_name=queue_name,
                priority=priority,
                description=description,
                catch_up=catch_up,
            )
        )
        return task

    return decorate


def discover() -> list[Recurrence]:
    """Import every installed app's ``tasks`` module; return all declarations so far."""
    autodiscover_modules("tasks")
    return list(_declared)


def schedule_error(schedule: str) -> str | None:
    """Say why ``schedule`` is not a valid cron schedule, or return None when it is."""
    try:
        iterator = croniter(schedule)
    except (ValueError, TypeError, KeyError) as exc:  # croniter's errors are ValueErrors
        return str(exc) or type(exc).__name__
    try:
        iterator.get_next()
    except CroniterBadDateError:
        return "it matches no date"
    return None
