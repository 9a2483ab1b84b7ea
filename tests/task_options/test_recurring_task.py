"""Recurring tasks and the clock: daylight saving time, and ``USE_TZ = False``."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import RecurringTask
from steady_queue.processes.scheduler import Scheduler
from steady_queue.testing import run_ready_jobs
from tests.models.recurring_clock import (
    Clock,
    booted,
    dashboard,
    declare,
    poll,
    run_times,
    run_until,
    utc,
)

pytestmark = pytest.mark.django_db

# --- a. Daylight saving time ------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "start", "expected"),
    [
        # London falls back at 01:00 UTC on 27 October 2030: 01:30 is seen at 00:30 and
        # 01:30 UTC. The run happens at the first, once.
        (
            "Europe/London",
            utc(2030, 10, 26),
            [utc(2030, 10, 26, 0, 30), utc(2030, 10, 27, 0, 30), utc(2030, 10, 28, 1, 30)],
        ),
        # New York falls back at 06:00 UTC on 3 November 2030: 01:30 at 05:30 and 06:30 UTC.
        (
            "America/New_York",
            utc(2030, 11, 2),
            [utc(2030, 11, 2, 5, 30), utc(2030, 11, 3, 5, 30), utc(2030, 11, 4, 6, 30)],
        ),
    ],
)
def test_a_fixed_time_runs_once_when_the_clocks_go_back(declared, settings, zone, start, expected):
    settings.TIME_ZONE = zone
    declare("30 1 * * *")
    clock = Clock(start)
    run_until(booted(clock), clock, start + timedelta(days=3), minutes=10)
    assert run_times() == expected


def test_next_run_after_the_first_repeated_time_is_the_next_day(settings):
    settings.TIME_ZONE = "Europe/London"
    task = RecurringTask(schedule="30 1 * * *")
    assert task.next_run_at(utc(2030, 10, 27, 0, 30)) == utc(2030, 10, 28, 1, 30)
    assert task.next_run_at(utc(2030, 10, 27, 1, 0)) == utc(2030, 10, 28, 1, 30)


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ("0 1-2 * * *", [utc(2030, 10, 27, 0), utc(2030, 10, 27, 2)]),  # 01:00 BST, 02:00 GMT
        ("*/30 1 * * *", [utc(2030, 10, 27, 0), utc(2030, 10, 27, 0, 30)]),  # first pass only
        ("*/30 * * * *", [utc(2030, 10, 27) + timedelta(minutes=30 * n) for n in range(5)]),
    ],
)
def test_the_repeated_hour_runs_once_unless_the_hour_field_is_a_wildcard(
    settings, schedule, expected
):
    settings.TIME_ZONE = "Europe/London"
    task = RecurringTask(schedule=schedule)
    window = (utc(2030, 10, 27, 0, 0), utc(2030, 10, 27, 2, 0))  # 01:00 BST to 02:00 GMT
    assert list(task.runs_between(window[0] - timedelta(seconds=1), window[1])) == expected


def test_interval_schedules_run_through_the_repeated_hour_in_real_time(settings):
    settings.TIME_ZONE = "Europe/London"
    hourly = RecurringTask(schedule="0 * * * *")
    day_start, day_end = utc(2030, 10, 26, 23), utc(2030, 10, 28, 0)  # local midnights
    assert list(hourly.runs_between(day_start - timedelta(seconds=1), day_end)) == [
        day_start + timedelta(hours=n) for n in range(26)
    ]  # 25 hours on that day, plus the next midnight


TRANSITIONS = {  # zone: the days its clocks go back and forward in 2030
    "Europe/London": [utc(2030, 10, 27), utc(2030, 3, 31)],
    "America/New_York": [utc(2030, 11, 3), utc(2030, 3, 10)],
    "Australia/Sydney": [utc(2030, 4, 7), utc(2030, 10, 6)],
    "America/Santiago": [utc(2030, 4, 7), utc(2030, 9, 8)],
}
SCHEDULES = ["30 1 * * *", "30 2 * * *", "0 0 * * *", "0 * * * *", "*/20 * * * *", "30 1-3 * * *"]


@pytest.mark.parametrize("zone", TRANSITIONS)
@pytest.mark.parametrize("use_tz", [True, False])
def test_walking_back_finds_the_runs_walking_forward_finds(settings, zone, use_tz):
    """The scheduler finds due runs walking back from now and next runs walking forward."""
    from steady_queue.task_options.recurring_task import next_time, recent_times

    settings.TIME_ZONE, settings.USE_TZ = zone, use_tz
    for day, schedule in itertools.product(TRANSITIONS[zone], SCHEDULES):
        start, end = day - timedelta(hours=12), day + timedelta(hours=12)
        if not use_tz:
            start, end = timezone.make_naive(start), timezone.make_naive(end)
        forward, run = [], start
        while (run := next_time(schedule, run)) <= end:
            forward.append(run)
        assert forward == recent_times(schedule, end, start, limit=10_000), (day, schedule)
        wall_clock = [timezone.make_naive(run) if use_tz else run for run in forward]
        fixed_hour = schedule.split()[1] != "*"
        if fixed_hour or not use_tz:  # one run per wall-clock time
            assert len(set(wall_clock)) == len(wall_clock), (day, schedule)


def test_a_fixed_time_in_the_skipped_hour_runs_when_the_clocks_go_forward(declared, settings):
    settings.TIME_ZONE = "Europe/London"  # 01:00 GMT jumps to 02:00 BST on 31 March 2030
    declare("30 1 * * *")
    clock = Clock(utc(2030, 3, 30))
    run_until(booted(clock), clock, utc(2030, 4, 2), minutes=10)
    assert run_times() == [utc(2030, 3, 30, 1, 30), utc(2030, 3, 31, 1, 0), utc(2030, 4, 1, 0, 30)]


# --- c. USE_TZ = False ----------------------------------------------------------------


@pytest.fixture
def naive_time(settings):
    settings.USE_TZ = False
    settings.TIME_ZONE = "Europe/Paris"


def test_without_use_tz_schedules_run_on_the_local_wall_clock(declared, naive_time):
    declare("0 12 * * *")
    clock = Clock(datetime(2030, 7, 1, 11, 0))
    run_until(booted(clock), clock, datetime(2030, 7, 2, 13, 0), minutes=30)
    assert run_times() == [datetime(2030, 7, 1, 12, 0), datetime(2030, 7, 2, 12, 0)]
    assert [result.status for result in run_ready_jobs()] == ["SUCCESSFUL"] * 2


def test_without_use_tz_the_scheduler_polls_and_the_dashboard_shows_the_tasks(declared, naive_time):
    declare("* * * * * *")
    scheduler = Scheduler(polling_interval=0.5)
    assert 0 <= scheduler.poll() <= 0.5
    task = RecurringTask.objects.get()
    task.enqueue_now()
    client = dashboard()
    listing = client.get(reverse("steady_queue_dashboard:recurring-list"))
    assert listing.status_code == 200
    assert f'datetime="{task.next_run_at().replace(microsecond=0):%Y-%m-%dT%H:%M}' in (
        listing.content.decode()
    )
    detail = reverse("steady_queue_dashboard:recurring-detail", args=[task.key])
    assert client.get(detail).status_code == 200


def test_without_use_tz_nothing_runs_twice_when_the_clock_goes_back(declared, naive_time):
    declare("* * * * *")
    clock = Clock(datetime(2030, 10, 27, 2, 50))  # Paris goes from 03:00 back to 02:00
    schedule = booted(clock)
    run_until(schedule, clock, datetime(2030, 10, 27, 2, 59), minutes=1)
    clock.now = datetime(2030, 10, 27, 2, 0)  # the local clock as read after the change
    run_until(schedule, clock, datetime(2030, 10, 27, 2, 5), minutes=1)
    restarted = booted(clock)  # even a scheduler started in the repeated hour adds nothing
    run_until(restarted, clock, datetime(2030, 10, 27, 2, 10), minutes=1)
    assert run_times() == [datetime(2030, 10, 27, 2, n) for n in range(51, 60)]
    run_until(schedule, clock, datetime(2030, 10, 27, 3, 1), minutes=1)
    assert run_times()[-2:] == [datetime(2030, 10, 27, 3, 0), datetime(2030, 10, 27, 3, 1)]


def test_without_use_tz_a_fixed_time_in_a_skipped_hour_runs_after_the_jump(declared, naive_time):
    declare("* * * * *", key="minutely")
    declare("30 2 * * *", key="fixed")
    clock = Clock(datetime(2030, 3, 31, 1, 58))  # Paris goes from 02:00 to 03:00
    schedule = booted(clock)
    run_until(schedule, clock, datetime(2030, 3, 31, 1, 59), minutes=1)
    clock.now = datetime(2030, 3, 31, 3, 0)
    poll(schedule)
    assert run_times("minutely") == [datetime(2030, 3, 31, 1, 59), datetime(2030, 3, 31, 3, 0)]
    assert run_times("fixed") == [datetime(2030, 3, 31, 3, 0)]  # 02:30 does not exist
