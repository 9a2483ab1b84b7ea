"""docs/reference/recurring.md: declarations, checks and the RecurringTask API (in-process)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings
from django.utils import timezone

from steady_queue.models import Job, RecurringTask
from steady_queue.task_options.recurring_task import recurring
from tests.tasks.acceptance import record, send_receipt

pytestmark = pytest.mark.django_db


def check_output() -> str:
    out, err = StringIO(), StringIO()
    try:
        call_command("check", stdout=out, stderr=err)
    except SystemCheckError as exc:
        return out.getvalue() + err.getvalue() + str(exc)
    return out.getvalue() + err.getvalue()


def test_decorator_returns_the_task_so_that_it_stacks(no_recurring):
    stacked = recurring(
        schedule="*/15 * * * *", key="sync alice", args=("alice",), queue_name="low"
    )(recurring(schedule="0 * * * *", key="sync bob", kwargs={"user": "bob"}, priority=10)(record))
    assert stacked is record
    assert "steady_queue" not in check_output()


@pytest.mark.parametrize(
    "schedule",
    ["0 12 * * *", "* * * * * */10", "@hourly", "@daily", "@weekly", "@monthly", "@yearly"],
)
def test_valid_schedules_pass_the_check(no_recurring, schedule):
    recurring(schedule=schedule, key="ok")(record)
    assert "steady_queue" not in check_output()


@pytest.mark.parametrize("schedule", ["not a schedule", "61 * * * *", "* * *", "@sometimes"])
def test_invalid_schedule_is_reported_with_the_key(no_recurring, schedule):
    recurring(schedule=schedule, key="broken report")(record)
    output = check_output()
    assert "broken report" in output
    assert schedule in output


def test_duplicate_keys_are_reported(no_recurring):
    recurring(schedule="@hourly", key="twice")(record)
    recurring(schedule="@daily", key="twice")(send_receipt)
    output = check_output()
    assert "twice" in output and "more than once" in output


def test_default_key_is_the_task_path_and_two_defaults_clash(no_recurring):
    recurring(schedule="@hourly")(record)
    recurring(schedule="@daily")(record)
    assert record.module_path in check_output()


def test_queue_not_allowed_priority_out_of_range_and_bad_arguments(no_recurring):
    recurring(schedule="@hourly", key="bad queue", queue_name="nope")(record)
    recurring(schedule="@hourly", key="bad priority", priority=500)(record)
    recurring(schedule="@hourly", key="bad args", args=({1, 2},))(record)
    output = check_output()
    for key in ("bad queue", "bad priority", "bad args"):
        assert key in output
    assert "nope" in output and "500" in output


def test_task_on_a_backend_missing_from_tasks_is_reported(no_recurring):
    from tests.tasks.acceptance import on_secondary

    recurring(schedule="@hourly", key="elsewhere")(on_secondary)
    only_default = {
        "default": {"BACKEND": "steady_queue.backend.SteadyQueueBackend", "QUEUES": ["default"]}
    }
    with override_settings(TASKS=only_default):
        output = check_output()
    assert "elsewhere" in output
    assert "secondary" in output


# --- The RecurringTask API ("At run time, from the shell...") --------------------------


@pytest.fixture
def report() -> RecurringTask:
    return RecurringTask.objects.create(
        key="daily report",
        schedule="0 12 * * *",
        task_path=send_receipt.module_path,
        arguments={"args": [5], "kwargs": {}},
        queue_name="default",
        priority=3,
        static=False,
    )


def test_next_run_at_and_description(report):
    report = RecurringTask.objects.get(key="daily report")
    next_run = report.next_run_at()
    assert timezone.is_aware(next_run)
    now = timezone.now()
    assert now < next_run <= now + timedelta(days=1)
    assert (next_run.astimezone(UTC).hour, next_run.minute) == (12, 0)
    assert report.schedule_description == "every day at 12:00"
    given = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert report.next_run_at(given) == datetime(2024, 1, 2, 12, 0, tzinfo=UTC)


@override_settings(TIME_ZONE="Europe/Paris")
def test_times_are_read_in_the_time_zone_setting(report):
    report = RecurringTask.objects.get(key="daily report")
    winter = report.next_run_at(datetime(2024, 1, 10, 0, 0, tzinfo=UTC))
    summer = report.next_run_at(datetime(2024, 7, 10, 0, 0, tzinfo=UTC))
    assert winter == datetime(2024, 1, 10, 11, 0, tzinfo=UTC)
    assert summer == datetime(2024, 7, 10, 10, 0, tzinfo=UTC)


def test_seconds_field_is_last():
    every_ten = RecurringTask(key="ten", schedule="* * * * * */10", task_path=record.module_path)
    start = datetime(2024, 1, 1, 0, 0, 3, tzinfo=UTC)
    assert every_ten.next_run_at(start) == datetime(2024, 1, 1, 0, 0, 10, tzinfo=UTC)


def test_enable_disable_and_enqueue_now(report):
    report = RecurringTask.objects.get(key="daily report")
    report.disable()
    assert RecurringTask.objects.get(key="daily report").enabled is False
    report.enable()
    assert RecurringTask.objects.get(key="daily report").enabled is True

    job = report.enqueue_now()
    assert isinstance(job, Job)
    job = Job.objects.get(pk=job.pk)
    assert job.task_path == send_receipt.module_path
    assert (job.queue_name, job.priority) == ("default", 3)  # the schedule's overrides
    assert job.arguments is not None
    result = send_receipt.get_result(str(job.pk))
    assert result.args == [5]
