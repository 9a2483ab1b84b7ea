"""What happens to claimed jobs whose process stops or dies, at the model level."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue import storage
from steady_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    Process,
    ReadyExecution,
    ScheduledExecution,
)
from steady_queue.processes import ProcessExitError, ProcessPrunedError
from tests.tasks import processes as tasks

pytestmark = pytest.mark.django_db(transaction=True)


def register(name: str, **attributes) -> Process:
    return Process.register(kind=Process.Kind.WORKER, name=name, pid=os.getpid(), **attributes)


def claim_one(process: Process, task=tasks.record) -> ClaimedExecution:
    result = task.enqueue("/dev/null", "job")
    [claimed] = storage.claim(["*"], 1, process)
    assert claimed.job_id == int(result.id)
    return claimed


def test_failing_claims_records_the_error_as_an_attempt():
    process = register("worker-crashed")
    claimed = claim_one(process)

    failed = ClaimedExecution.fail_all_with(
        ClaimedExecution.objects.filter(process=process), ProcessExitError("killed by signal 9")
    )

    assert failed == 1 and not ClaimedExecution.objects.exists()
    failure = FailedExecution.objects.get(job_id=claimed.job_id)
    assert failure.exception_class == "steady_queue.processes.ProcessExitError"
    assert failure.message == "killed by signal 9"
    [attempt] = Job.objects.get(pk=claimed.job_id).attempts
    assert attempt["worker_id"] == "worker-crashed"
    assert attempt["error"]["exception_class"] == failure.exception_class


def test_a_task_opting_into_at_least_once_runs_again_after_a_crash():
    process = register("worker-crashed")
    claimed = claim_one(process, tasks.idempotent)

    ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), ProcessExitError("gone"))

    assert ScheduledExecution.objects.filter(job_id=claimed.job_id).exists()
    assert not FailedExecution.objects.exists()
    assert len(Job.objects.get(pk=claimed.job_id).attempts) == 1


def test_releasing_claims_makes_their_jobs_ready_without_an_attempt():
    process = register("worker-quitting")
    claimed = claim_one(process)

    assert process.release_all_claimed_executions() == 1

    assert ReadyExecution.objects.filter(job_id=claimed.job_id).exists()
    assert not ClaimedExecution.objects.exists()
    assert Job.objects.get(pk=claimed.job_id).attempts == []


def test_deregistering_releases_claims_unless_told_to_keep_them():
    releasing, keeping = register("worker-a"), register("worker-b")
    released, kept = claim_one(releasing), claim_one(keeping)

    releasing.deregister()
    keeping.deregister(release_claims=False)

    assert not Process.objects.exists()
    assert ReadyExecution.objects.filter(job_id=released.job_id).exists()
    assert list(ClaimedExecution.orphaned().values_list("job_id", flat=True)) == [kept.job_id]


def test_pruning_fails_the_jobs_of_processes_without_a_recent_heartbeat():
    stale = timezone.now() - timedelta(minutes=10)
    dead = register("worker-dead", hostname="host-1")
    Process.objects.filter(pk=dead.pk).update(last_heartbeat_at=stale)
    alive = register("worker-alive")
    me = register("supervisor-me")
    Process.objects.filter(pk=me.pk).update(last_heartbeat_at=stale)
    dead_claim, alive_claim = claim_one(dead), claim_one(alive)

    assert Process.prune(excluding=me) == 1

    assert set(Process.objects.values_list("name", flat=True)) == {"worker-alive", "supervisor-me"}
    failure = FailedExecution.objects.get(job_id=dead_claim.job_id)
    assert failure.exception_class == "steady_queue.processes.ProcessPrunedError"
    assert failure.message.startswith("Process worker-dead (pid ")
    assert "on host-1) was pruned: no heartbeat since" in failure.message
    assert ClaimedExecution.objects.filter(job_id=alive_claim.job_id).exists()


def test_a_late_finish_of_a_failed_claim_changes_nothing():
    from steady_queue.runner.perform import perform

    process = register("worker-pruned")
    claimed = claim_one(process)
    ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), ProcessPrunedError("pruned"))

    assert perform(claimed) is None

    job = Job.objects.get(pk=claimed.job_id)
    assert job.finished_at is None and len(job.attempts) == 1
    assert FailedExecution.objects.filter(job_id=job.pk).exists()
