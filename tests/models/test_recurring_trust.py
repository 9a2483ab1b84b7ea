"""Recurring tasks when things go wrong: cleanup, a broken task, database outages."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job, RecurringExecution, RecurringTask
from steady_queue.task_options.recurring_task import recurring
from steady_queue.testing import run_ready_jobs
from tests.models.recurring_trust_helpers import (
    START,
    Clock,
    booted,
    dashboard,
    declare,
    poll,
    run_times,
    run_until,
)
from tests.tasks import features as tasks
from tests.tasks.recurring_trust import UNREACHABLE, broken_key, unreachable

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


# --- d. One broken task does not stop the others --------------------------------------


def test_a_task_whose_enqueue_raises_is_logged_and_the_others_keep_running(declared, caplog):
    recurring(schedule="* * * * *", key="broken")(broken_key)
    declare("* * * * *", key="healthy")
    clock = Clock(START)
    schedule = booted(clock)
    with caplog.at_level(logging.ERROR, logger="steady_queue.scheduler"):
        run_until(schedule, clock, START + timedelta(minutes=3), minutes=1)
    assert run_times("healthy") == [START + timedelta(minutes=n) for n in (1, 2, 3)]
    assert run_times("broken") == [] and Job.objects.count() == 3
    failures = [r for r in caplog.records if "broken" in r.getMessage()]
    assert len(failures) == 3
    assert all(r.exc_info and r.exc_info[0] is TypeError for r in failures)


def test_an_unreachable_database_leaves_the_run_due_and_fails_the_poll(declared):
    recurring(schedule="* * * * *", key="unreachable")(unreachable)
    declare("* * * * *", key="healthy")
    clock = Clock(START)
    schedule = booted(clock)
    clock.advance(minutes=1)
    UNREACHABLE["now"] = True
    try:
        with pytest.raises(OperationalError):
            poll(schedule)
    finally:
        UNREACHABLE["now"] = False
    assert run_times("healthy") == [START + timedelta(minutes=1)]
    assert run_times("unreachable") == []
    assert poll(schedule) == 1  # the next poll enqueues it
    assert run_times("unreachable") == [START + timedelta(minutes=1)]


def never_fires() -> RecurringTask:
    """A task stored at run time (no system check saw it) on February 30th."""
    return RecurringTask.objects.create(
        key="never", schedule="0 0 30 2 *", task_path=tasks.tick.module_path, static=False
    )


def test_a_schedule_that_never_fires_is_logged_once_and_the_others_keep_running(declared, caplog):
    declare("* * * * *", key="healthy")
    never_fires()
    clock = Clock(START)
    schedule = booted(clock)
    with caplog.at_level(logging.ERROR, logger="steady_queue.scheduler"):
        run_until(schedule, clock, START + timedelta(minutes=3), minutes=1)
    assert run_times("healthy") == [START + timedelta(minutes=n) for n in (1, 2, 3)]
    assert [r.getMessage() for r in caplog.records if "never" in r.getMessage()] == [
        "Recurring task never is not scheduled: its schedule '0 0 30 2 *' never fires"
    ]


def test_the_dashboard_shows_a_schedule_that_never_fires_without_a_next_run(declared):
    never_fires()
    client = dashboard()
    listing = client.get(reverse("steady_queue_dashboard:recurring-list"))
    assert listing.status_code == 200 and "0 0 30 2 *" in listing.content.decode()
    detail = client.get(reverse("steady_queue_dashboard:recurring-detail", args=["never"]))
    assert detail.status_code == 200


def test_the_check_reports_a_schedule_that_never_fires(declared):
    from steady_queue.checks.recurring import check_recurring_tasks

    declare("0 0 30 2 *", key="february 30th")
    [error] = check_recurring_tasks()
    assert error.id == "steady_queue.E202"
    assert "february 30th" in error.msg and "matches no date" in error.msg


def test_run_now_of_a_task_whose_enqueue_raises_answers_with_the_error(declared):
    recurring(schedule="* * * * *", key="broken")(broken_key)
    RecurringTask.objects.sync_static(declared)
    client = dashboard()
    response = client.post(
        reverse("steady_queue_dashboard:recurring-run", args=["broken"]), follow=True
    )
    assert response.status_code == 200
    assert "cannot compute a concurrency key" in response.content.decode()
    assert not Job.objects.exists()


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
