"""Catch-up and outages: cleanup does not make a scheduler run a past run again, and an
outage ends with one run, or the runs within the catch-up window, capped."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import Job, RecurringExecution, RecurringTask
from steady_queue.testing import run_ready_jobs
from tests.models.recurring_clock import (
    START,
    Clock,
    booted,
    declare,
    poll,
    run_times,
    run_until,
)

pytestmark = pytest.mark.django_db

# --- b. Catch-up bookkeeping survives clearing finished jobs -----------------------------


def test_catch_up_does_not_run_again_what_cleanup_deleted(declared):
    declare("0 * * * *", catch_up=timedelta(days=1))
    clock = Clock(START)
    schedule = booted(clock, created_at=START - timedelta(minutes=1))
    run_until(schedule, clock, START + timedelta(hours=3, minutes=30), minutes=10)
    assert run_times() == [START, *(START + timedelta(hours=n) for n in (1, 2, 3))]

    run_ready_jobs()
    Job.objects.update(finished_at=timezone.now() - timedelta(days=2))
    Job.objects.clear_finished_in_batches()
    assert not Job.objects.exists() and not RecurringExecution.objects.exists()

    clock.advance(hours=1)  # a scheduler starts after the 04:00 run was missed
    booted(clock)
    assert run_times() == [START + timedelta(hours=4)]
    assert RecurringTask.objects.get().last_enqueued_run_at == START + timedelta(hours=4)


def test_a_run_older_than_the_last_enqueued_one_is_not_enqueued_again(declared):
    declare("0 * * * *")
    RecurringTask.objects.sync_static(declared)
    task = RecurringTask.objects.get()
    assert task.enqueue(START) is not None
    Job.objects.all().delete()  # its execution row goes with it
    assert task.enqueue(START) is None
    assert task.enqueue(START - timedelta(hours=1)) is None
    assert task.enqueue(START + timedelta(hours=1)) is not None
    assert task.enqueue_now() is not None  # an extra run does not move the bookkeeping
    assert RecurringTask.objects.get().last_enqueued_run_at == START + timedelta(hours=1)


# --- e. No flood after an outage ------------------------------------------------------


def test_without_catch_up_an_outage_ends_with_one_run_the_latest(declared, caplog):
    declare("* * * * *")
    clock = Clock(START)
    schedule = booted(clock)
    clock.advance(minutes=1)
    assert poll(schedule) == 1
    clock.advance(hours=2)  # every poll failed meanwhile: the database was down
    with caplog.at_level(logging.WARNING, logger="steady_queue.scheduler"):
        assert poll(schedule) == 1
    assert run_times() == [START + timedelta(minutes=1), START + timedelta(minutes=121)]
    [warning] = [r.getMessage() for r in caplog.records if "missed" in r.getMessage()]
    assert "task" in warning and "2030-01-01 12:02:00" in warning


def test_with_catch_up_an_outage_enqueues_the_runs_within_the_window(declared):
    declare("* * * * *", catch_up=timedelta(minutes=30))
    clock = Clock(START)
    schedule = booted(clock, created_at=START)
    clock.advance(hours=2)
    assert poll(schedule) == 30
    assert run_times() == [START + timedelta(minutes=n) for n in range(91, 121)]


def test_catch_up_is_capped_after_an_outage_and_at_start(declared):
    from steady_queue.task_options.recurring_task import CATCH_UP_LIMIT

    declare("* * * * * *", catch_up=timedelta(days=1))
    clock = Clock(START)
    schedule = booted(clock, created_at=START)
    clock.advance(hours=2)
    assert poll(schedule) == CATCH_UP_LIMIT
    now = clock.now
    assert run_times() == [now - timedelta(seconds=n) for n in reversed(range(CATCH_UP_LIMIT))]

    clock.advance(hours=2)  # the scheduler restarts after another outage
    booted(clock)
    assert len(run_times()) == 2 * CATCH_UP_LIMIT
    assert run_times()[-1] == clock.now
