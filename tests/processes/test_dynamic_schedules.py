"""Schedules made at run time, under two real schedulers: found within one poll, enqueued
once per fire time, and an edited cron followed from the next poll on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import Job, Process, RecurringExecution
from steady_queue.processes.scheduler import Scheduler
from steady_queue.recurring_task import schedule

from .conftest import wait_until

pytestmark = pytest.mark.process
TICK = "tests.tasks.features.tick"
# The schedulers' poll: a schedule written at run time is seen within it.
POLL = timedelta(seconds=Scheduler().polling_interval)


def run_times() -> list:
    runs = RecurringExecution.objects.filter(task_key="dynamic").order_by("run_at")
    return list(runs.values_list("run_at", flat=True))


def test_a_schedule_made_while_two_schedulers_run_fires_once_per_time_and_follows_edits(
    start_supervisor,
):
    for _ in range(2):  # each: a dispatcher and a scheduler
        start_supervisor("FAST", "--only-dispatchers", recurring=True, children=2)
    assert Process.objects.filter(kind=Process.Kind.SCHEDULER).count() == 2

    created_at = timezone.now()
    schedule("dynamic", TICK, cron="* * * * * *", args=["every second"])  # every second
    wait_until(lambda: len(run_times()) >= 5, timeout=30, what="five runs of every second")

    first = run_times()
    assert first[0] <= created_at + POLL + timedelta(seconds=1)  # found within one poll
    assert len(first) == len(set(first))
    assert all(t.microsecond == 0 for t in first)  # fire times, not poll times

    edited_at = timezone.now()
    schedule("dynamic", TICK, cron="* * * * * */3", args=["every third second"])
    settled = edited_at + POLL + timedelta(seconds=0.5)
    wait_until(
        lambda: len([t for t in run_times() if t > settled]) >= 3,
        timeout=30,
        what="three runs on the edited schedule",
    )

    runs = run_times()
    assert len(runs) == len(set(runs))  # never twice for one fire time
    assert all(t.second % 3 == 0 for t in runs if t > settled)
    assert Job.objects.filter(task_path=TICK).count() == len(runs)
