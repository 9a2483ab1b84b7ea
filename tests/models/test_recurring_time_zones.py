"""A schedule's time zone: fire times across daylight saving time, driven by a clock."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from steady_queue.recurring_task import next_times, schedule
from tests.models.recurring_clock import Clock, booted, poll, run_times, utc
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db

NEW_YORK = ZoneInfo("America/New_York")


def run_through(key: str, cron: str, start: datetime, end: datetime) -> list[datetime]:
    """Two schedulers polling every 10 minutes of the clock from ``start`` to ``end``."""
    clock = Clock(start)
    schedule(key, tasks.tick, cron=cron, timezone="America/New_York")
    first, second = booted(clock), booted(clock)
    while clock.now < end:
        clock.advance(minutes=10)
        poll(first)
        poll(second)
    return run_times(key)


def local_days(times: list[datetime]) -> Counter:
    return Counter(time.astimezone(NEW_YORK).date() for time in times)


def test_half_past_two_fires_once_on_the_spring_forward_day(declared):
    # 2030-03-10 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day.
    runs = run_through("spring", "30 2 * * *", utc(2030, 3, 9, 5), utc(2030, 3, 12, 5))

    assert runs == [
        utc(2030, 3, 9, 7, 30),  # 02:30 EST
        utc(2030, 3, 10, 7, 0),  # the missing 02:30 runs at the first time after the jump
        utc(2030, 3, 11, 6, 30),  # 02:30 EDT
    ]
    assert set(local_days(runs).values()) == {1}


def test_half_past_two_fires_once_on_the_fall_back_day(declared):
    # 2030-11-03 02:00 EDT goes back to 01:00 EST: 01:00-01:59 is seen twice, 02:30 once.
    runs = run_through("fall", "30 2 * * *", utc(2030, 11, 2, 4), utc(2030, 11, 5, 5))

    assert runs == [
        utc(2030, 11, 2, 6, 30),  # 02:30 EDT
        utc(2030, 11, 3, 7, 30),  # 02:30 EST
        utc(2030, 11, 4, 7, 30),
    ]


def test_a_repeated_wall_clock_time_fires_on_its_first_pass_only(declared):
    runs = run_through("repeated", "30 1 * * *", utc(2030, 11, 2, 4), utc(2030, 11, 4, 4))

    assert runs == [utc(2030, 11, 2, 5, 30), utc(2030, 11, 3, 5, 30)]  # 01:30 EDT twice


def test_the_preview_lists_the_next_fire_times_in_the_schedules_zone():
    times = next_times("30 2 * * *", utc(2030, 3, 9, 0), 3, zone="America/New_York")

    assert [t.astimezone(NEW_YORK).strftime("%d %H:%M") for t in times] == [
        "09 02:30",
        "10 03:00",
        "11 02:30",
    ]
