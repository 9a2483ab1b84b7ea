"""One broken recurring task does not stop the others: an enqueue that raises, an
unreachable database, a schedule that never fires (logged, shown, checked)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.urls import reverse

from steady_queue.models import Job, RecurringTask
from steady_queue.task_options.recurring_task import recurring
from tests.models.recurring_clock import (
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
from tests.tasks.enqueue_errors import UNREACHABLE, broken_key, unreachable

pytestmark = pytest.mark.django_db

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
