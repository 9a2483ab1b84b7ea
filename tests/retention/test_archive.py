"""archive=True: a job moves to ArchivedJob with its attempts, error, arguments and
labels, in the batch's transaction; restore() enqueues it again, audited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import steady_queue
from steady_queue.compat import InvalidTask
from steady_queue.labels import labels
from steady_queue.models import ArchivedJob, FailedExecution, Job, JobLabel, states
from steady_queue.ops import audit
from steady_queue.retention import Retention
from steady_queue.retention.pruning import prune
from steady_queue.testing import run_ready_jobs
from tests import tasks

from .helpers import alive, cancelled, failed, finished

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def _archiving(monkeypatch):
    monkeypatch.setattr(
        steady_queue,
        "retention_rules",
        [
            Retention(state="failed", keep=30 * DAY, archive=True),
            Retention(state="cancelled", keep=DAY, archive=True),
            Retention(task="tests.tasks.greet", state="succeeded", keep=DAY, archive=True),
        ],
    )


@pytest.fixture
def announced():
    seen: list[dict] = []

    def receive(sender, **kwargs):
        seen.append(kwargs)
        return True

    audit.operation_performed.connect(receive, dispatch_uid="test_retention_archive")
    yield seen
    audit.operation_performed.disconnect(dispatch_uid="test_retention_archive")


def failed_with_labels(age: timedelta, message: str = "boom") -> int:
    with labels("tenant:7", "import"):
        return failed(age, message=message)


def test_a_failed_job_moves_with_its_attempts_error_arguments_and_labels():
    job_id = failed_with_labels(31 * DAY, message="the disk is full")
    job = Job.objects.get(pk=job_id)
    failure = FailedExecution.objects.get(job_id=job_id)
    young = failed(29 * DAY)

    [removed] = prune(pause=0)

    assert (removed.removed, removed.archived) == (1, 1)
    assert alive(job_id, young) == {young}
    assert not FailedExecution.objects.filter(job_id=job_id).exists()
    assert not JobLabel.objects.filter(job_id=job_id).exists()
    archived = ArchivedJob.objects.get(job_id=job_id)
    assert archived.state == states.FAILED
    assert archived.task_path == "tests.tasks.explode"
    assert archived.arguments == job.arguments
    assert archived.attempts == job.attempts and len(archived.attempts) == 1
    assert archived.labels == ["tenant:7", "import"]
    assert archived.exception_class == "builtins.ValueError"
    assert archived.error_message == failure.message
    assert archived.error == f"builtins.ValueError: {failure.message}"
    assert archived.backtrace == failure.backtrace
    assert archived.ended_at == failure.created_at
    assert archived.enqueued_at == job.created_at
    assert archived.rule == "failed jobs kept 30 days, then archived"
    assert archived.call() == (["the disk is full"], {})


def test_cancelled_and_succeeded_jobs_are_archived_in_their_state():
    cancel = cancelled(2 * DAY)
    greeting = finished(2 * DAY, tasks.greet, name="Ada")
    finished_at = Job.objects.get(pk=greeting).finished_at
    prune(pause=0)
    assert alive(cancel, greeting) == set()
    by_job = dict(ArchivedJob.objects.values_list("job_id", "state"))
    assert by_job == {cancel: states.CANCELLED, greeting: states.FINISHED}
    archived = ArchivedJob.objects.get(job_id=greeting)
    assert archived.return_value == tasks.greet.call(name="Ada")
    assert (archived.ended_at, archived.error, archived.exception_class) == (finished_at, "", "")
    assert ArchivedJob.objects.get(job_id=cancel).exception_class.endswith("JobCancelled")


def test_search_by_task_error_label_and_state():
    labelled = failed_with_labels(31 * DAY, message="timeout talking to billing")
    plain = failed(31 * DAY, message="the disk is full")
    greeting = finished(2 * DAY, tasks.greet, name="Ada")
    prune(pause=0)

    def found(**criteria) -> set[int]:
        return set(ArchivedJob.objects.search(**criteria).values_list("job_id", flat=True))

    assert found() == {labelled, plain, greeting}
    assert found(task="explode") == {labelled, plain}
    assert found(task="tests.tasks.greet") == {greeting}
    assert found(error="BILLING") == {labelled}
    assert found(error="ValueError") == {labelled, plain}
    assert found(label="tenant:7") == {labelled}
    assert found(label="tenant") == set()  # a label is matched whole
    assert found(state=states.FINISHED) == {greeting}
    assert found(task="explode", label="import") == {labelled}


def test_restore_enqueues_a_new_job_through_enqueue_with_its_labels_and_is_audited(announced):
    job_id = failed_with_labels(31 * DAY, message="again")
    prune(pause=0)
    archived = ArchivedJob.objects.get(job_id=job_id)

    result = archived.restore()

    new = Job.objects.get(pk=result.id)
    assert new.pk != job_id
    assert (new.task_path, new.queue_name, new.labels) == (
        "tests.tasks.explode",
        "default",
        ["tenant:7", "import"],
    )
    assert new.arguments == archived.arguments and new.attempts == []
    assert set(JobLabel.objects.filter(job=new).values_list("label", flat=True)) == {
        "tenant:7",
        "import",
    }
    archived.refresh_from_db()
    assert archived.restored_job_id == new.pk and archived.restored_at is not None
    [entry] = [seen for seen in announced if seen["action"] == "restore"]
    assert entry["target"] == f"archived job {job_id}"
    assert entry["details"]["after"]["job"] == new.pk
    assert entry["link_to"] == ("job-detail", str(new.pk))


def test_restore_with_other_arguments_runs_them():
    job_id = failed(31 * DAY, message="first")
    prune(pause=0)
    result = ArchivedJob.objects.get(job_id=job_id).restore(args=["second"])
    run_ready_jobs()
    failure = FailedExecution.objects.get(job_id=result.id)
    assert "second" in failure.message


def test_restoring_a_task_that_is_gone_is_refused_and_writes_nothing(announced):
    job_id = failed(31 * DAY)
    prune(pause=0)
    ArchivedJob.objects.filter(job_id=job_id).update(task_path="tests.tasks.no_such_task")
    archived = ArchivedJob.objects.get(job_id=job_id)
    jobs_before = Job.objects.count()

    with pytest.raises(InvalidTask, match="no_such_task"):
        archived.restore()

    assert Job.objects.count() == jobs_before
    archived.refresh_from_db()
    assert archived.restored_job_id is None
    assert announced == []


def test_archiving_a_batch_costs_the_same_statements_whatever_its_size():
    def statements(count: int) -> int:
        ids = [failed(31 * DAY) for _ in range(count)]
        with CaptureQueriesContext(connection) as captured:
            [removed] = prune(pause=0, batch_size=count)
        assert removed.archived == count and alive(*ids) == set()
        return len(captured)

    assert statements(1) == statements(12)
