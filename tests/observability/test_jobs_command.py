"""``manage.py steady_queue_jobs``: dry runs change nothing; real runs change and are audited."""

from __future__ import annotations

import getpass
from datetime import timedelta

import pytest
from django.core.management.base import CommandError
from django.utils import timezone

from steady_queue.models import FailedExecution, Job, Process, ReadyExecution
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests import tasks

from .conftest import run_command

pytestmark = pytest.mark.django_db
ACTOR = f"os:{getpass.getuser()}"


def jobs(*args: str):
    return run_command("steady_queue_jobs", *args)


def states() -> dict[int, str]:
    """Every job's state, read from the database."""
    return {job.pk: job.state for job in Job.objects.with_execution().order_by("pk")}


@pytest.fixture
def failed() -> list[int]:
    """Three jobs failed with "boom", one with "disk full", and one pending, one scheduled."""
    ids = [tasks.explode.enqueue().id for _ in range(3)]
    ids.append(tasks.explode.enqueue("disk full").id)
    run_ready_jobs()
    tasks.noop.enqueue()
    tasks.noop.using(run_after=timedelta(hours=1)).enqueue()
    return [int(pk) for pk in ids]


def test_retry_dry_run_changes_nothing_and_says_what_it_would_do(failed):
    before = states()
    result = jobs("retry", "--status", "failed")
    assert result.code == 0
    assert result.lines[0] == "Dry run: would retry 4 failed jobs."
    assert result.lines[-1] == "Nothing was changed. Run again with --yes to retry them."
    assert states() == before
    assert not AuditEntry.objects.exists()


def test_retry_runs_in_batches_and_writes_an_audit_entry(failed):
    result = jobs("retry", "--yes", "--batch-size", "3")
    assert result.lines == ["4 failed jobs retried.", f"Recorded in the audit log as {ACTOR}."]
    assert {pk: state for pk, state in states().items() if pk in failed} == dict.fromkeys(
        failed, "ready"
    )
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.user, entry.action) == (ACTOR, None, "retry all")
    assert (entry.target, entry.affected, entry.succeeded) == ("failed jobs", 4, True)
    assert entry.details["source"] == "manage.py steady_queue_jobs"
    assert entry.details["status"] == "failed"


def test_error_filter_selects_failures_by_message(failed):
    result = jobs("retry", "--error", "disk", "--yes")
    assert result.lines[0] == "1 failed job whose error contains 'disk' retried."
    assert states()[failed[3]] == "ready"
    assert [states()[pk] for pk in failed[:3]] == ["failed"] * 3


def test_older_than_compares_when_the_job_failed(failed):
    FailedExecution.objects.filter(job_id=failed[0]).update(
        created_at=timezone.now() - timedelta(hours=2)
    )
    assert jobs("retry", "--older-than", "1h").lines[0] == (
        "Dry run: would retry 1 failed job older than 1h."
    )
    jobs("retry", "--older-than", "1h", "--yes")
    assert [states()[pk] for pk in failed] == ["ready", "failed", "failed", "failed"]


def test_discard_needs_a_status_and_its_dry_run_changes_nothing(failed):
    with pytest.raises(CommandError, match="discard applies to ready or scheduled or blocked"):
        jobs("discard")
    before = states()
    assert jobs("discard", "--status", "ready").lines[0] == "Dry run: would discard 1 ready job."
    assert states() == before


def test_discard_deletes_the_selected_jobs_only(failed):
    before = states()
    result = jobs("discard", "--status", "failed", "--task", "tests.tasks.explode", "--yes")
    assert result.lines[0] == "4 failed jobs of task tests.tasks.explode discarded."
    assert states() == {pk: s for pk, s in before.items() if pk not in failed}
    assert AuditEntry.objects.get().action == "discard all"


def test_dispatch_makes_scheduled_jobs_ready(failed):
    [scheduled] = [pk for pk, state in states().items() if state == "scheduled"]
    before = states()
    jobs("dispatch", "--status", "scheduled")
    assert states() == before
    assert jobs("dispatch", "--yes").lines[0] == "1 scheduled job dispatched."
    assert states()[scheduled] == "ready"


def test_retry_refuses_other_statuses(failed):
    with pytest.raises(CommandError, match="retry applies to failed or cancelled jobs"):
        jobs("retry", "--status", "ready")


def test_error_filter_needs_failed_jobs(failed):
    with pytest.raises(CommandError, match="--error applies to failed jobs only"):
        jobs("list", "--error", "boom")


def test_cancel_is_a_dry_run_until_yes_then_ends_the_jobs_cancelled_and_is_audited(failed):
    [pending] = [pk for pk, state in states().items() if state == "ready"]
    before = states()
    result = jobs("cancel", "--status", "ready")
    assert result.lines[0] == "Dry run: would cancel 1 ready job."
    assert result.lines[-1] == "Nothing was changed. Run again with --yes to cancel them."
    assert states() == before
    assert not AuditEntry.objects.exists()

    result = jobs("cancel", "--status", "ready", "--yes")
    assert result.lines == ["1 ready job cancelled.", f"Recorded in the audit log as {ACTOR}."]
    assert states() == {**before, pending: "failed"}
    error = FailedExecution.objects.get(job_id=pending)
    assert error.exception_class == "steady_queue.exceptions.JobCancelled"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target, entry.affected) == ("cancel all", "ready jobs", 1)
    assert entry.details["source"] == "manage.py steady_queue_jobs"


def test_cancel_asks_running_jobs_to_stop(failed):
    worker = Process.objects.create(kind="Worker", name="w", pid=4242, hostname="box")
    [claimed] = ReadyExecution.claim(["*"], 1, worker)
    assert (
        jobs("cancel", "--status", "running").lines[1].startswith("Running jobs are asked to stop")
    )
    assert not Job.objects.filter(cancel_requested_at__isnull=False).exists()
    result = jobs("cancel", "--status", "running", "--yes")
    assert result.lines[0].startswith("1 running job cancelled. Running jobs are asked")
    job = Job.objects.with_execution().get(pk=claimed.job_id)
    assert job.state == "running" and job.cancel_requested()


def test_cancel_needs_a_status_it_applies_to(failed):
    with pytest.raises(CommandError, match="cancel applies to ready or scheduled or running"):
        jobs("cancel", "--yes")
    with pytest.raises(CommandError, match="cancel applies to"):
        jobs("cancel", "--status", "failed", "--yes")
    assert AuditEntry.objects.count() == 0


def test_list_counts_and_shows_newest_first(failed):
    result = jobs("list", "--status", "failed", "--limit", "2")
    assert result.lines[0] == "4 failed jobs match."
    assert [int(line.split()[0]) for line in result.lines[1:3]] == [failed[3], failed[2]]
    assert "ValueError: disk full" in result.lines[1]
    assert result.lines[-1] == "(2 shown, newest first)"


@pytest.fixture
def no_audit_log():
    """As without the dashboard app: nobody records the command line's operations."""
    from steady_queue.ops.audit import operation_performed
    from steady_queue_dashboard.audit import record_operation

    uid = "steady_queue_dashboard.audit.operations"
    operation_performed.disconnect(dispatch_uid=uid)
    yield
    operation_performed.connect(record_operation, dispatch_uid=uid)


def test_without_the_dashboard_the_action_runs_and_says_no_entry_was_written(failed, no_audit_log):
    result = jobs("retry", "--yes")
    assert result.lines == [
        "4 failed jobs retried.",
        "The dashboard app is not installed: no audit entry was written.",
    ]
    assert states()[failed[0]] == "ready"
    assert not AuditEntry.objects.exists()


def test_a_batch_size_below_one_is_a_usage_error(failed):
    with pytest.raises(CommandError, match="'0' is not a positive whole number"):
        jobs("retry", "--yes", "--batch-size", "0")


def test_discarding_throttled_jobs_from_the_command_line():
    from tests.tasks import rate_limited

    for n in range(5):
        rate_limited.three_a_minute.enqueue(n)

    result = jobs("discard", "--status", "throttled", "--yes")

    assert result.lines[0] == "2 throttled jobs discarded."
    assert sorted(states().values()) == ["ready"] * 3


@pytest.mark.parametrize(
    ("old", "said"), [("pending", "1 ready job matches."), ("in-progress", "0 running jobs match.")]
)
def test_the_old_spellings_of_a_status_are_accepted_and_said_canonically(old, said):
    tasks.noop.enqueue()
    result = jobs("list", "--status", old)
    assert result.code == 0
    assert result.lines[0] == said
