"""Recurring tasks: declarations, schedules, exactly-once runs, enable/disable, catch-up."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections
from django.utils import timezone

from steady_queue.models import Job, RecurringExecution, RecurringTask
from steady_queue.processes.recurring_schedule import RecurringSchedule
from steady_queue.task_options.recurring_task import describe, recurring
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db

START = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime = START):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


def every_second(declared, **options):
    recurring(schedule="* * * * * *", key="every-second", **options)(tasks.tick)


def booted(clock: Clock) -> RecurringSchedule:
    schedule = RecurringSchedule(clock=clock)
    schedule.boot()
    return schedule


def run_times(key: str = "every-second") -> list[datetime]:
    return list(
        RecurringExecution.objects.filter(task_key=key)
        .order_by("run_at")
        .values_list("run_at", flat=True)
    )


def test_recurring_is_stackable_and_keeps_each_schedule(declared):
    recurring(schedule="0 10 * * *", key="morning", args=("Alice",))(tasks.tick)
    recurring(schedule="0 22 * * *", key="evening", kwargs={"label": "Bob"}, priority=5)(tasks.tick)
    RecurringTask.objects.sync_static(declared)
    morning, evening = RecurringTask.objects.order_by("key").reverse()
    assert (morning.key, morning.schedule) == ("morning", "0 10 * * *")
    assert evening.priority == 5
    job = evening.enqueue(START)
    assert job.arguments["kwargs"] == {"label": "Bob"}
    assert job.priority == 5


def test_sync_removes_static_tasks_gone_from_the_code_and_keeps_enabled_flags(declared):
    RecurringTask.objects.create(key="removed", schedule="@daily", task_path="x.y")
    RecurringTask.objects.create(key="dynamic", schedule="@daily", task_path="x.y", static=False)
    every_second(declared)
    RecurringTask.objects.sync_static(declared)
    RecurringTask.objects.get(key="every-second").disable()
    RecurringTask.objects.sync_static(declared)
    assert set(RecurringTask.objects.values_list("key", flat=True)) == {"every-second", "dynamic"}
    assert not RecurringTask.objects.get(key="every-second").enabled


def test_one_run_is_enqueued_once_whoever_enqueues_it(declared):
    every_second(declared)
    RecurringTask.objects.sync_static(declared)
    task = RecurringTask.objects.get()
    assert task.enqueue(START) is not None
    assert task.enqueue(START) is None
    assert Job.objects.count() == 1
    assert Job.objects.get().recurring_execution.run_at == START


def test_three_schedulers_enqueue_every_second_exactly_once(declared):
    every_second(declared)
    clocks = [Clock(), Clock(), Clock()]
    schedulers = [booted(clock) for clock in clocks]
    for _ in range(30):
        for clock, scheduler in zip(clocks, schedulers, strict=True):
            clock.advance(seconds=1)
            scheduler.reload()
            scheduler.enqueue_due()
    assert run_times() == [START + timedelta(seconds=n) for n in range(1, 31)]
    assert Job.objects.count() == 30


@pytest.mark.django_db(transaction=True)
def test_racing_schedulers_on_separate_connections_never_enqueue_a_run_twice(declared):
    every_second(declared)
    RecurringTask.objects.sync_static(declared)
    runs = [START + timedelta(seconds=n) for n in range(30)]
    recorded = []

    def scheduler():
        try:
            task = RecurringTask.objects.get()
            recorded.extend(run for run in runs if task.enqueue(run) is not None)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=scheduler) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(recorded) == runs
    assert run_times() == runs
    assert Job.objects.count() == 30


def test_a_disabled_task_is_not_enqueued_until_enabled_again(declared):
    every_second(declared)
    clock = Clock()
    scheduler = booted(clock)
    RecurringTask.objects.get().disable()
    for _ in range(3):
        clock.advance(seconds=1)
        scheduler.reload()
        scheduler.enqueue_due()
    assert run_times() == []
    RecurringTask.objects.get().enable()
    clock.advance(seconds=1)
    scheduler.reload()
    for _ in range(2):
        clock.advance(seconds=1)
        scheduler.enqueue_due()
    assert run_times() == [START + timedelta(seconds=5), START + timedelta(seconds=6)]


def test_enqueue_now_enqueues_one_run_and_records_it(declared):
    recurring(schedule="@yearly", key="yearly")(tasks.tick)
    RecurringTask.objects.sync_static(declared)
    job = RecurringTask.objects.get().enqueue_now()
    assert Job.objects.get() == job
    assert run_times("yearly") == [job.recurring_execution.run_at]


def test_catch_up_enqueues_exactly_the_runs_missed_within_the_window(declared):
    recurring(schedule="* * * * *", key="minutely", catch_up=timedelta(minutes=5))(tasks.tick)
    RecurringTask.objects.sync_static(declared)
    task = RecurringTask.objects.get()
    RecurringTask.objects.update(created_at=START - timedelta(days=1))
    task.enqueue(START - timedelta(minutes=10))
    task.enqueue(START - timedelta(minutes=3))
    booted(Clock(START + timedelta(seconds=30)))
    booted(Clock(START + timedelta(seconds=40)))  # a second scheduler adds nothing
    missed = [START - timedelta(minutes=n) for n in (2, 1, 0)]
    assert run_times("minutely") == [
        START - timedelta(minutes=10),
        START - timedelta(minutes=3),
        *missed,
    ]


def test_the_window_bounds_catch_up(declared):
    recurring(schedule="* * * * *", key="minutely", catch_up=timedelta(minutes=3))(tasks.tick)
    RecurringTask.objects.sync_static(declared)
    RecurringTask.objects.update(created_at=START - timedelta(days=1))
    booted(Clock(START))
    assert run_times("minutely") == [START - timedelta(minutes=n) for n in (2, 1, 0)]


def test_without_catch_up_missed_runs_are_skipped(declared):
    recurring(schedule="* * * * *", key="minutely")(tasks.tick)
    RecurringTask.objects.sync_static(declared)
    RecurringTask.objects.update(created_at=START - timedelta(days=1))
    booted(Clock(START))
    assert run_times("minutely") == []


def test_schedules_accept_a_seconds_field_and_aliases():
    task = RecurringTask(schedule="* * * * * */15")
    assert task.next_run_at(START) == START + timedelta(seconds=15)
    assert RecurringTask(schedule="@hourly").next_run_at(START) == START + timedelta(hours=1)


def test_schedules_follow_the_time_zone_setting(settings):
    settings.TIME_ZONE = "Europe/Madrid"
    summer = datetime(2030, 7, 1, 0, 0, tzinfo=UTC)
    assert RecurringTask(schedule="0 12 * * *").next_run_at(summer) == summer.replace(hour=10)


def test_next_run_defaults_to_now():
    after = RecurringTask(schedule="* * * * *").next_run_at()
    assert timezone.now() < after <= timezone.now() + timedelta(minutes=1)


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        ("* * * * * *", "every second"),
        ("* * * * * */5", "every 5 seconds"),
        ("*/10 * * * *", "every 10 minutes"),
        ("15 * * * *", "every hour at minute 15"),
        ("@daily", "every day at 00:00"),
        ("30 9 * * 1-5", "every weekday at 09:30"),
        ("0 8 * * 1,5", "every Monday and Friday at 08:00"),
        ("0 12 1 * *", "every month on day 1 at 12:00"),
        ("0 0 25 12 *", "every year on December 25 at 00:00"),
        ("0 */2 * * *", "0 */2 * * *"),
    ],
)
def test_schedules_are_described_in_words(schedule, words):
    assert describe(schedule) == words
    assert RecurringTask(schedule=schedule).schedule_description == words


def test_the_scheduler_process_sleeps_until_the_next_run_at_most_a_polling_interval(declared):
    from steady_queue.processes.scheduler import Scheduler

    recurring(schedule="@yearly", key="yearly")(tasks.tick)
    scheduler = Scheduler(polling_interval=0.5)
    assert scheduler.poll() == 0.5
    assert RecurringTask.objects.get().key == "yearly"
    every_second(declared)
    RecurringTask.objects.sync_static(declared)
    assert 0 <= scheduler.poll() <= 0.5
