"""``manage.py steady_queue_recurring``: list; run, enable and disable (dry run unless --yes)."""

from __future__ import annotations

import getpass

import pytest
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from steady_queue.models import Job, RecurringExecution, RecurringTask
from steady_queue.recurring_task import schedule
from steady_queue_dashboard.models import AuditEntry

from .conftest import run_command

pytestmark = pytest.mark.django_db
ACTOR = f"os:{getpass.getuser()}"


def recurring(*args: str):
    return run_command("steady_queue_recurring", *args)


@pytest.fixture
def nightly() -> RecurringTask:
    return RecurringTask.objects.create(
        key="nightly", task_path="tests.tasks.noop", schedule="0 3 * * *"
    )


def test_list_shows_each_task_with_state_next_and_last_run_in_one_query(nightly):
    RecurringTask.objects.create(
        key="weekly", task_path="tests.tasks.noop", schedule="@weekly", enabled=False
    )
    recurring("run", "nightly", "--yes")
    with CaptureQueriesContext(connection) as queries:
        lines = recurring("list").lines
    assert len(queries) == 1
    assert lines[0].split()[:4] == ["KEY", "STATE", "NEXT", "RUN"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["nightly"][0] == "enabled" and "T03:00:00" in rows["nightly"][1]
    assert rows["nightly"][2] != "-"  # its last run
    assert rows["weekly"][:3] == ["disabled", "-", "-"]


def test_run_is_a_dry_run_until_yes_then_enqueues_and_is_audited(nightly):
    result = recurring("run", "nightly")
    assert result.lines[0] == (
        "Dry run: would enqueue recurring task nightly (tests.tasks.noop) once now; "
        "its schedule goes on as before."
    )
    assert result.lines[-1] == "Nothing was changed. Run again with --yes to run it."
    assert not Job.objects.exists() and not AuditEntry.objects.exists()

    result = recurring("run", "nightly", "--yes")
    job = Job.objects.get()
    assert result.lines == [
        f"Recurring task nightly was enqueued as job {job.pk}.",
        f"Recorded in the audit log as {ACTOR}.",
    ]
    assert RecurringExecution.objects.get().job_id == job.pk
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target, entry.affected) == ("run now", "recurring task nightly", 1)
    assert entry.details["source"] == "manage.py steady_queue_recurring"


def test_disable_and_enable_are_dry_runs_until_yes_and_audited(nightly):
    assert (
        recurring("disable", "nightly")
        .lines[0]
        .startswith(
            "Dry run: would disable recurring task nightly: the schedulers stop enqueueing it"
        )
    )
    nightly.refresh_from_db()
    assert nightly.enabled
    assert recurring("disable", "nightly", "--yes").lines[0] == (
        "Recurring task nightly is disabled."
    )
    nightly.refresh_from_db()
    assert not nightly.enabled
    assert recurring("disable", "nightly", "--yes").lines == [
        "Recurring task nightly is already disabled."
    ]
    recurring("enable", "nightly", "--yes")
    nightly.refresh_from_db()
    assert nightly.enabled
    actions = list(AuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert actions == ["disable", "enable"]  # "already disabled" changed nothing


def test_a_run_that_cannot_be_enqueued_fails_with_its_reason_and_is_audited():
    RecurringTask.objects.create(key="gone", task_path="tests.tasks.nope", schedule="@daily")
    with pytest.raises(CommandError, match="Could not run recurring task gone"):
        recurring("run", "gone", "--yes")
    assert not Job.objects.exists()
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.succeeded) == ("run now", False)


def test_an_unknown_key_or_no_key_is_refused():
    with pytest.raises(CommandError, match="No recurring task 'nope'"):
        recurring("enable", "nope", "--yes")
    with pytest.raises(CommandError, match="run needs the key of a recurring task"):
        recurring("run")


# Schedules made at run time ---------------------------------------------------------------


def test_schedule_is_a_dry_run_showing_the_next_runs_until_yes_then_audited(declared):
    dry = recurring(
        "schedule", "report", "--task", "tests.tasks.add", "--cron", "30 2 * * *",
        "--args", "[1, 2]", "--timezone", "America/New_York",
    )  # fmt: skip
    assert dry.lines[0] == (
        "Dry run: would create the dynamic recurring schedule report: tests.tasks.add on "
        "'30 2 * * *' (At 02:30) in America/New_York."
    )
    assert dry.lines[1] == "Next runs:"
    assert len(dry.lines[2:7]) == 5 and all("T02:30:00-0" in line for line in dry.lines[2:7])
    assert dry.lines[-1] == "Nothing was changed. Run again with --yes to schedule it."
    assert not RecurringTask.objects.exists() and not AuditEntry.objects.exists()

    done = recurring(
        "schedule", "report", "--task", "tests.tasks.add", "--cron", "30 2 * * *",
        "--args", "[1, 2]", "--timezone", "America/New_York", "--yes",
    )  # fmt: skip
    assert done.lines == [
        "Recurring schedule report was created.",
        f"Recorded in the audit log as {ACTOR}.",
    ]
    task = RecurringTask.objects.get()
    assert task.dynamic and task.timezone == "America/New_York"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target, entry.affected) == ("schedule", "recurring task report", 1)


@pytest.mark.parametrize(
    "options, words",
    [
        (["--cron", "not cron"], "Bad cron schedule"),
        (["--cron", "@daily", "--timezone", "Atlantis/Capital"], "not a known time zone"),
        (["--cron", "@daily", "--args", "[1"], "--args is not JSON"),
        (["--cron", "@daily", "--args", "[1, 2, 3]"], "cannot take these arguments"),
    ],
)
def test_schedule_refuses_bad_input_and_writes_nothing(declared, options, words):
    with pytest.raises(CommandError, match=words):
        recurring("schedule", "report", "--task", "tests.tasks.add", *options, "--yes")
    assert not RecurringTask.objects.exists() and not AuditEntry.objects.exists()


def test_pause_resume_and_unschedule_a_dynamic_schedule(declared):
    schedule("report", "tests.tasks.add", cron="@daily", args=[1, 2])
    recurring("pause", "report", "--yes")
    assert not RecurringTask.objects.get().enabled
    recurring("resume", "report", "--yes")
    assert RecurringTask.objects.get().enabled
    assert (
        recurring("unschedule", "report")
        .lines[0]
        .startswith("Dry run: would delete the dynamic recurring schedule report")
    )
    assert RecurringTask.objects.exists()
    assert recurring("unschedule", "report", "--yes").lines[0] == (
        "Recurring schedule report was deleted."
    )
    assert not RecurringTask.objects.exists()
    actions = list(AuditEntry.objects.order_by("pk").values_list("action", flat=True))
    assert actions == ["disable", "enable", "unschedule"]


def test_a_declared_schedule_cannot_be_unscheduled_nor_overwritten(nightly):
    with pytest.raises(CommandError, match="declared in code"):
        recurring("unschedule", "nightly", "--yes")
    with pytest.raises(CommandError, match="declared in code"):
        recurring("schedule", "nightly", "--task", "tests.tasks.noop", "--cron", "@hourly")
    nightly.refresh_from_db()
    assert nightly.schedule == "0 3 * * *" and not AuditEntry.objects.exists()
