"""A clock to drive recurring schedules by hand, declarations on it, and the runs recorded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import User
from django.test import Client

from steady_queue.models import Process, RecurringExecution, RecurringTask
from steady_queue.processes.recurring_schedule import RecurringSchedule
from steady_queue.task_options.recurring_task import discover, recurring
from tests.tasks import features as tasks

START = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


def declare(schedule: str, key: str = "task", **options) -> None:
    recurring(schedule=schedule, key=key, **options)(tasks.tick)


def booted(clock: Clock, created_at: datetime | None = None) -> RecurringSchedule:
    if created_at is not None:  # catch-up never goes back before the task was declared
        RecurringTask.objects.sync_static(discover())
        RecurringTask.objects.update(created_at=created_at)
    schedule = RecurringSchedule(clock=clock)
    schedule.boot()
    return schedule


def poll(schedule: RecurringSchedule) -> int:
    schedule.reload()
    return schedule.enqueue_due()


def run_until(schedule: RecurringSchedule, clock: Clock, end: datetime, **step) -> None:
    while clock.now < end:
        clock.advance(**step)
        poll(schedule)


def run_times(key: str = "task") -> list[datetime]:
    runs = RecurringExecution.objects.filter(task_key=key).order_by("run_at")
    return list(runs.values_list("run_at", flat=True))


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)


def dashboard() -> Client:
    """A superuser's client, with a scheduler alive so that next runs are shown."""
    Process.objects.create(kind=Process.Kind.SCHEDULER, name="scheduler-1", pid=4242)
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client
