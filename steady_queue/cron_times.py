"""When a cron schedule fires, in ``settings.TIME_ZONE``, daylight saving time included.

croniter does the arithmetic on aware local times. With ``USE_TZ = True`` the results
are returned in UTC; with ``USE_TZ = False`` Django's datetimes are naive wall-clock
times of ``TIME_ZONE``, and so are the results.

Daylight saving time, for aware times:

- Clocks go back (a wall-clock hour is seen twice): a schedule with a fixed hour
  (``30 1 * * *``, ``0 9-17 * * *``) fires once per wall-clock time, at its first
  occurrence, as cron does. A schedule whose hour field is ``*`` (every N minutes or
  seconds, hourly) keeps firing in real time through both passes of the hour.
- Clocks go forward (a wall-clock hour does not exist): croniter moves a fixed time in
  the missing hour to the first wall-clock time after the jump (01:30 becomes 02:00 in
  London); interval schedules have no runs in the missing hour.

Naive times (``USE_TZ = False``) follow the same rules, except that every schedule
fires once per wall-clock time in a repeated hour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from croniter import HOUR_FIELD, croniter
from django.utils import timezone


def next_time(schedule: str, after: datetime) -> datetime:
    """Return the first time strictly after ``after`` that ``schedule`` fires."""
    return next(_fire_times(schedule, after, backwards=False))


def recent_times(schedule: str, until: datetime, after: datetime, limit: int) -> list[datetime]:
    """Return the latest ``limit`` times in (``after``, ``until``] that ``schedule`` fires.

    Oldest first. Walks backwards from ``until``, so a long gap costs ``limit`` steps.
    """
    # croniter's previous time is strictly before its start: start just after ``until``
    # (at a whole second, the schedules' finest unit) so that ``until`` itself counts.
    start = until.replace(microsecond=0) + timedelta(seconds=1)
    times: list[datetime] = []
    for fired in _fire_times(schedule, start, backwards=True):
        if fired <= after or len(times) == limit:
            break
        times.append(fired)
    return times[::-1]


def _fire_times(schedule: str, start: datetime, *, backwards: bool) -> Iterator[datetime]:
    zone = timezone.get_default_timezone()
    naive = timezone.is_naive(start)  # USE_TZ = False: wall-clock times, as Django stores them
    if naive:
        start = timezone.make_aware(start, zone)
    iterator = croniter(schedule, start.astimezone(zone))
    # Naive times cannot tell the two passes of a repeated hour apart: one run each.
    once_per_wall_clock_time = naive or iterator.expanded[HOUR_FIELD] != ["*"]
    for fired in _steps(iterator, backwards):
        # Through UTC and back so that ``fold`` is 1 exactly on the second pass of a
        # repeated wall-clock time (PEP 495): walking backwards, croniter sets it on all.
        local = fired.astimezone(UTC).astimezone(zone)
        if local.fold and once_per_wall_clock_time:
            continue  # this wall-clock time fired on the first pass
        yield timezone.make_naive(local, zone) if naive else local.astimezone(UTC)


def _steps(iterator: croniter, backwards: bool) -> Iterator[datetime]:
    step: Callable = iterator.get_prev if backwards else iterator.get_next
    while True:
        yield step(datetime)
