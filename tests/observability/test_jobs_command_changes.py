"""``steady_queue_jobs edit|duplicate|enqueue``: dry runs write nothing, --yes changes and
is audited, bad input is a clear error with nothing written."""

from __future__ import annotations

import getpass

import pytest
from django.core.management.base import CommandError

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests import tasks
from tests.tasks import unique

from .conftest import run_command

pytestmark = pytest.mark.django_db
ACTOR = f"os:{getpass.getuser()}"


def jobs(*args) -> list[str]:
    result = run_command("steady_queue_jobs", *[str(arg) for arg in args])
    assert result.code == 0
    return result.lines


def refused(*args) -> CommandError:
    with pytest.raises(CommandError) as raised:
        run_command("steady_queue_jobs", *[str(arg) for arg in args])
    return raised.value


def everything() -> list[tuple]:
    """Every job's values and every audit entry: what a refused command must not change."""
    values = Job.objects.order_by("pk").values_list("pk", "arguments", "priority", "queue_name")
    return [*values, *AuditEntry.objects.values_list("pk", flat=True)]


@pytest.fixture
def ready() -> int:
    return int(tasks.echo.enqueue(1, mode="old").id)


def test_edit_dry_run_shows_the_diff_and_writes_nothing(ready):
    before = everything()
    lines = jobs("edit", ready, "--args", "[2]", "--priority", "3", "--queue", "low")
    assert lines == [
        f"Dry run: would edit job {ready} (tests.tasks.echo, ready).",
        '  arguments: {"args": [1], "kwargs": {"mode": "old"}} -> '
        '{"args": [2], "kwargs": {"mode": "old"}}',
        '  queue_name: "default" -> "low"',
        "  priority: 0 -> 3",
        "Nothing was changed. Run again with --yes to edit it.",
    ]
    assert everything() == before


def test_edit_with_yes_changes_the_job_and_is_audited(ready):
    lines = jobs("edit", ready, "--kwargs", '{"mode": "new"}', "--run-after", "2030-01-01T00:00Z")
    assert lines[-1].startswith("Nothing was changed")
    lines = jobs(
        "edit", ready, "--kwargs", '{"mode": "new"}', "--run-after", "2030-01-01T00:00Z", "--yes"
    )
    assert lines[0] == f"Job {ready} edited."
    assert lines[-1] == f"Recorded in the audit log as {ACTOR}."
    job = Job.objects.with_execution().get(pk=ready)
    assert job.arguments == {"args": [1], "kwargs": {"mode": "new"}}
    assert job.state == "scheduled"
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target) == (ACTOR, "edit", f"job {ready}")
    assert entry.details["before"]["arguments"] == {"args": [1], "kwargs": {"mode": "old"}}
    assert entry.details["after"]["scheduled_at"] == "2030-01-01T00:00:00+00:00"
    jobs("edit", ready, "--run-after", "now", "--yes")
    assert Job.objects.with_execution().get(pk=ready).state == "ready"


def test_edit_that_changes_nothing_says_so(ready):
    lines = jobs("edit", ready, "--args", "[1]", "--yes")
    assert lines == [f"Job {ready} already has these values: nothing was changed."]
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--args", "[2"], 2, "--args is not valid JSON"),
        (["--args", '{"a": 1}'], 2, "--args must be a JSON list, not dict"),
        (["--kwargs", "[1]"], 2, "--kwargs must be a JSON object, not list"),
        # InvalidTask (Django 6) or InvalidTaskError (the django-tasks backport, 5.2).
        (["--priority", "1000"], 2, ": priority must be a whole number"),
        (["--queue", "nowhere"], 2, "InvalidTask"),
        (["--run-after", "tomorrow"], 2, "is not an ISO 8601 date and time"),
        (["--run-after", "2030-01-01T00:00"], 2, "has no UTC offset"),
        (["--status", "failed", "--args", "[2]"], 2, "edit does not take --status"),
        ([], 2, "edit needs something to change"),
    ],
)
def test_edit_refuses_bad_input_and_writes_nothing(ready, args, code, message):
    before = everything()
    for yes in ([], ["--yes"]):
        error = refused("edit", ready, *args, *yes)
        assert error.returncode == code
        assert message in str(error)
    assert everything() == before


def test_edit_of_a_finished_or_missing_job_exits_1():
    result = tasks.echo.enqueue(1)
    run_ready_jobs()
    error = refused("edit", result.id, "--args", "[2]", "--yes")
    assert (error.returncode, str(error)) == (
        1,
        f"Job {result.id} is finished: only ready, scheduled, blocked, throttled, paused, "
        "waiting or failed jobs can be edited.",
    )
    assert refused("edit", 999999, "--args", "[2]").returncode == 1
    assert refused("edit", "abc", "--args", "[2]").returncode == 2


def test_edit_to_a_unique_key_another_job_holds_exits_1_and_changes_nothing():
    holder = unique.sync_account.enqueue(1)
    other = int(unique.sync_account.enqueue(2).id)
    before = everything()
    error = refused("edit", other, "--args", "[1]", "--yes")
    assert error.returncode == 1
    assert f"Job {holder.id} already holds the unique key" in str(error)
    assert everything() == before


def test_duplicate_dry_run_then_yes(ready):
    before = everything()
    lines = jobs("duplicate", ready, "--args", "[5]")
    assert lines[0] == f"Dry run: would enqueue a copy of job {ready} (ready):"
    assert '  arguments: {"args": [5], "kwargs": {"mode": "old"}}' in lines
    assert everything() == before
    lines = jobs("duplicate", ready, "--args", "[5]", "--yes")
    copy = Job.objects.exclude(pk=ready).get()
    assert lines == [
        f"Job {ready} duplicated as job {copy.pk}.",
        f"Recorded in the audit log as {ACTOR}.",
    ]
    assert copy.arguments == {"args": [5], "kwargs": {"mode": "old"}}
    assert AuditEntry.objects.get().action == "duplicate"
    error = refused("duplicate", ready, "--args", '["x", NaN]', "--yes")
    assert error.returncode == 2
    assert Job.objects.count() == 2


def test_enqueue_dry_run_then_yes():
    lines = jobs("enqueue", "tests.tasks.add", "--args", "[1, 2]", "--priority", "4")
    assert lines[0] == "Dry run: would enqueue:"
    assert "  task: tests.tasks.add" in lines and "  priority: 4" in lines
    assert not Job.objects.exists()
    lines = jobs("enqueue", "tests.tasks.add", "--args", "[1, 2]", "--queue", "low", "--yes")
    job = Job.objects.get()
    assert lines == [
        f"Job {job.pk} enqueued (tests.tasks.add).",
        f"Recorded in the audit log as {ACTOR}.",
    ]
    assert (job.queue_name, job.arguments) == ("low", {"args": [1, 2], "kwargs": {}})
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.details["task"]) == ("enqueue", "tests.tasks.add")
    assert run_ready_jobs(queues=["low"])[0].return_value == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tests.tasks.nope"], "cannot be imported"),
        (["tests.tasks.CALLS"], "is not a task"),
        (["tests.tasks.add", "--args", "[object]"], "--args is not valid JSON"),
        (["tests.tasks.add", "--queue", "nowhere"], "InvalidTask"),
        ([], "enqueue needs TASK_PATH"),
    ],
)
def test_enqueue_refuses_bad_input_and_writes_nothing(args, message):
    error = refused("enqueue", *args, "--yes")
    assert error.returncode == 2
    assert message in str(error)
    assert not Job.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.django_db(databases=["default", "billing"])
def test_enqueue_on_another_backend_writes_to_its_queue_database():
    jobs("enqueue", "tests.tasks.add", "--args", "[1, 2]", "--backend", "billing", "--yes")
    assert not Job.objects.exists()
    assert Job.objects.using("billing").get().backend == "billing"


@pytest.mark.django_db(databases=["default", "billing"])
def test_edit_with_backend_acts_on_that_queue_database():
    result = tasks.add.using(backend="billing").enqueue(1, 2)
    error = refused("edit", result.id, "--args", "[3, 4]", "--yes")  # not in the default one
    assert error.returncode == 1
    jobs("edit", result.id, "--args", "[3, 4]", "--backend", "billing", "--yes")
    assert Job.objects.using("billing").get().arguments["args"] == [3, 4]


@pytest.fixture
def no_audit_log():
    """As without the dashboard app: nobody records the changes."""
    from steady_queue.ops.audit import operation_performed
    from steady_queue_dashboard.audit import record_operation

    uid = "steady_queue_dashboard.audit.operations"
    operation_performed.disconnect(dispatch_uid=uid)
    yield
    operation_performed.connect(record_operation, dispatch_uid=uid)


def test_without_the_dashboard_the_edit_runs_and_says_no_entry_was_written(ready, no_audit_log):
    lines = jobs("edit", ready, "--priority", "2", "--yes")
    assert lines[-1] == "The dashboard app is not installed: no audit entry was written."
    assert Job.objects.get(pk=ready).priority == 2
    assert not AuditEntry.objects.exists()


def test_edit_and_enqueue_take_labels_as_a_json_list(ready):
    lines = jobs("edit", ready, "--labels", '["tenant:7", "urgent"]', "--yes")

    assert f"Job {ready} edited." in lines
    assert '  labels: [] -> ["tenant:7", "urgent"]' in lines
    assert list(Job.objects.labelled(all=["tenant:7", "urgent"])) == [Job.objects.get(pk=ready)]

    jobs("enqueue", "tests.tasks.echo", "--args", "[5]", "--labels", '["import-1"]', "--yes")
    enqueued = Job.objects.labelled(any=["import-1"]).get()
    assert enqueued.labels == ["import-1"] and enqueued.arguments["args"] == [5]


@pytest.mark.parametrize("value", ['"tenant:7"', "[1]", '["' + "x" * 101 + '"]', "[bad"])
def test_bad_labels_are_refused_and_change_nothing(ready, value):
    before = everything()

    for action in (("edit", ready), ("enqueue", "tests.tasks.echo")):
        error = refused(*action, "--labels", value, "--yes")
        assert "label" in str(error).lower(), error

    assert everything() == before
    assert not Job.objects.exclude(pk=ready).exists()
