"""Declare tasks that the scheduler enqueues on a cron schedule: ``@recurring``.

Schedules use croniter's syntax: five fields, an optional sixth for seconds (last,
as in croniter), and aliases such as ``@hourly``; times are in the schedule's
``timezone``, by default ``settings.TIME_ZONE`` (see "Cron times" below for daylight
saving time and ``USE_TZ = False``). The scheduler imports the ``tasks`` module of every
installed app to find them. Schedules made at run time
(``steady_queue.recurring_task.schedule``) follow the same rules:
docs/reference/runtime-schedules.md.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import HOUR_FIELD, CroniterBadDateError, croniter
from django.utils import timezone as dj_timezone
from django.utils.module_loading import autodiscover_modules

from ..compat import Task

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
    # An IANA time zone name; "" for settings.TIME_ZONE, whatever it is when the schedule runs.
    timezone: str = ""


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
    timezone: str | None = None,
) -> Callable[[Task], Task]:
    """Enqueue the task on ``schedule``; stack it to run one task on several schedules.

    ``key`` (default: the task's path) names the schedule and must be unique.
    ``timezone`` (an IANA name such as ``"Europe/Paris"``; default ``settings.TIME_ZONE``)
    is where the cron fields are read, daylight saving time included.
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
                timezone=timezone or "",
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


def timezone_error(name: str) -> str | None:
    """Say why ``name`` is not a time zone the schedules can use, or return None when it is."""
    if not name:
        return None
    try:
        zone_for(name)
    except (ZoneInfoNotFoundError, ValueError):  # ValueError: a path, not a key ("../x")
        return f"{name!r} is not a known time zone (an IANA name such as 'Europe/Paris')"
    return None


def zone_for(name: str | None) -> ZoneInfo:
    """The zone a schedule's cron fields are read in: ``name``, or ``settings.TIME_ZONE``."""
    return ZoneInfo(name) if name else dj_timezone.get_default_timezone()


# Cron times -----------------------------------------------------------------------------
# When a cron schedule fires, in its time zone (``settings.TIME_ZONE`` unless it names
# another), daylight saving time included.
#
# croniter does the arithmetic on aware local times. With ``USE_TZ = True`` the results
# are returned in UTC; with ``USE_TZ = False`` Django's datetimes are naive wall-clock
# times of ``TIME_ZONE``, and so are the results (a schedule of another zone is worked
# out there and its times given back as ``TIME_ZONE``'s wall-clock times).
#
# Daylight saving time, for aware times:
#
# - Clocks go back (a wall-clock hour is seen twice): a schedule with a fixed hour
#   (``30 1 * * *``, ``0 9-17 * * *``) fires once per wall-clock time, at its first
#   occurrence, as cron does. A schedule whose hour field is ``*`` (every N minutes or
#   seconds, hourly) keeps firing in real time through both passes of the hour.
# - Clocks go forward (a wall-clock hour does not exist): croniter moves a fixed time in
#   the missing hour to the first wall-clock time after the jump (01:30 becomes 02:00 in
#   London); interval schedules have no runs in the missing hour.
#
# Naive times (``USE_TZ = False``) follow the same rules, except that every schedule
# fires once per wall-clock time in a repeated hour.


def next_time(schedule: str, after: datetime, zone: str | None = None) -> datetime:
    """Return the first time strictly after ``after`` that ``schedule`` fires in ``zone``."""
    return next(_fire_times(schedule, after, backwards=False, zone=zone))


def next_times(schedule: str, after: datetime, count: int, zone: str | None = None) -> list:
    """Return the first ``count`` times strictly after ``after`` that ``schedule`` fires."""
    times = _fire_times(schedule, after, backwards=False, zone=zone)
    return [next(times) for _ in range(count)]


def recent_times(
    schedule: str, until: datetime, after: datetime, limit: int, zone: str | None = None
) -> list[datetime]:
    """Return the latest ``limit`` times in (``after``, ``until``] that ``schedule`` fires.

    Oldest first. Walks backwards from ``until``, so a long gap costs ``limit`` steps.
    """
    # croniter's previous time is strictly before its start: start just after ``until``
    # (at a whole second, the schedules' finest unit) so that ``until`` itself counts.
    start = until.replace(microsecond=0) + timedelta(seconds=1)
    times: list[datetime] = []
    for fired in _fire_times(schedule, start, backwards=True, zone=zone):
        if fired <= after or len(times) == limit:
            break
        times.append(fired)
    return times[::-1]


def _fire_times(
    schedule: str, start: datetime, *, backwards: bool, zone: str | None
) -> Iterator[datetime]:
    local_zone, django_zone = zone_for(zone), dj_timezone.get_default_timezone()
    naive = dj_timezone.is_naive(start)  # USE_TZ = False: wall-clock times, as Django stores them
    if naive:
        start = dj_timezone.make_aware(start, django_zone)
    iterator = croniter(schedule, start.astimezone(local_zone))
    # Naive times cannot tell the two passes of a repeated hour apart: one run each.
    once_per_wall_clock_time = naive or iterator.expanded[HOUR_FIELD] != ["*"]
    for fired in _steps(iterator, backwards):
        # Through UTC and back so that ``fold`` is 1 exactly on the second pass of a
        # repeated wall-clock time (PEP 495): walking backwards, croniter sets it on all.
        local = fired.astimezone(UTC).astimezone(local_zone)
        if local.fold and once_per_wall_clock_time:
            continue  # this wall-clock time fired on the first pass
        yield dj_timezone.make_naive(local, django_zone) if naive else local.astimezone(UTC)


def _steps(iterator: croniter, backwards: bool) -> Iterator[datetime]:
    step: Callable = iterator.get_prev if backwards else iterator.get_next
    while True:
        yield step(datetime)


# Schedules in words ---------------------------------------------------------------------
# Cron schedules in words for people: "every day at 12:00", "every 5 minutes".
#
# Common shapes get a sentence; anything else is shown as the expression itself.

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def describe(schedule: str) -> str:
    """Return ``schedule`` in words, or the expression itself when it has no simple reading."""
    fields = ALIASES.get(schedule.strip().lower(), schedule).split()
    if len(fields) == 6 and fields[:5] == ["*"] * 5:
        return _every(fields[5], "second") or schedule
    if len(fields) == 6 and fields[5].isdigit():
        # croniter's sixth field is the second (last): describe the minute, then the second.
        words = describe(" ".join(fields[:5]))
        if words == " ".join(fields[:5]):
            return schedule
        second = int(fields[5])
        if second and re.search(r"\d\d:\d\d$", words):
            return f"{words}:{second:02d}"
        return words if second == 0 else f"{words}, at second {second}"
    if len(fields) != 5:
        return schedule
    minute, hour, day, month, weekday = fields
    if hour == "*" and (day, month, weekday) == ("*", "*", "*"):
        if minute.isdigit():
            return f"every hour at minute {minute}"
        return _every(minute, "minute") or schedule
    if minute.isdigit() and hour.isdigit():
        days = _days(day, month, weekday)
        return f"{days} at {int(hour):02d}:{int(minute):02d}" if days else schedule
    return schedule


def _every(field: str, unit: str) -> str | None:
    if field == "*":
        return f"every {unit}"
    if field.startswith("*/") and field[2:].isdigit():
        return f"every {field[2:]} {unit}s"
    return None


def _days(day: str, month: str, weekday: str) -> str | None:
    if (day, month, weekday) == ("*", "*", "*"):
        return "every day"
    if (day, month) == ("*", "*"):
        return _weekdays(weekday)
    if weekday != "*" or not day.isdigit():
        return None
    if month == "*":
        return f"every month on day {day}"
    if month.isdigit() and 1 <= int(month) <= 12:
        return f"every year on {calendar.month_name[int(month)]} {day}"
    return None


def _weekdays(weekday: str) -> str | None:
    if weekday == "1-5":
        return "every weekday"
    names = weekday.split(",")
    if all(name.isdigit() and int(name) <= 7 for name in names):
        return "every " + " and ".join(WEEKDAYS[int(name) % 7] for name in names)
    return None


def in_words(schedule: str) -> str:
    """Return ``schedule`` in words for the console: cron-descriptor's reading when installed.

    cron-descriptor reads a sixth field as seconds *first* (Quartz), croniter as seconds
    last: six-field schedules, and any it cannot read, get ``describe``'s plainer words.
    """
    expanded = ALIASES.get(schedule.strip().lower(), schedule)
    if len(expanded.split()) != 5:
        return describe(schedule)
    try:
        from cron_descriptor import get_description
    except ImportError:  # the optional `cron` extra is not installed
        return describe(schedule)
    try:
        return get_description(expanded)
    except Exception:  # its FormatError, IndexError...: our own words instead
        return describe(schedule)
