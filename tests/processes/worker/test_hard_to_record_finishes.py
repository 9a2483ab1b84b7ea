"""A real one-thread worker ends every hard-to-record job once and keeps running jobs."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from steady_queue.models import ClaimedExecution, FailedExecution, Job, ReadyExecution
from tests.processes.conftest import wait_until
from tests.tasks import finish as finish_tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

HARD = ["returns_nul", "returns_surrogate", "raises_nul", "raises_surrogate"]
ESCAPING = ["cancelled", "interrupted"]


def runs(log: Path) -> list[str]:
    return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []


def test_a_one_thread_worker_ends_each_hard_job_once_and_runs_the_next(start_supervisor, tmp_path):
    log = tmp_path / "finish.log"
    names = HARD + ESCAPING
    ids = [int(getattr(finish_tasks, name).enqueue().id) for name in names]
    first_after = int(finish_tasks.fine.enqueue("after").id)
    supervisor = start_supervisor("ONE_THREAD", children=1, SQ_FINISH_LOG=str(log))

    wait_until(lambda: Job.objects.get(pk=first_after).finished_at, what="the next job to run")
    # A second job later: a worker that re-runs a job (the lost-claims sweep) has had time to.
    second_after = int(finish_tasks.fine.enqueue("after-2").id)
    wait_until(lambda: Job.objects.get(pk=second_after).finished_at, what="a later job to run")
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0

    assert sorted(runs(log)) == sorted([*names, "after", "after-2"])
    assert set(FailedExecution.objects.values_list("job_id", flat=True)) == set(ids)
    assert not ClaimedExecution.objects.exists()
    assert not ReadyExecution.objects.exists()


def test_kill_9_right_after_finishes_never_strands_a_limited_key(start_supervisor, tmp_path):
    """Kill the worker as soon as a limited job finishes, again and again: every job ends.

    No dispatcher runs, so its concurrency maintenance cannot repair a lost slot: only the
    finish (slot hand-off in the same transaction) and the crash path can keep the key going.
    """
    from steady_queue.models import BlockedExecution, Process, Semaphore

    ids = [int(finish_tasks.limited.enqueue("k", 0.05).id) for _ in range(30)]
    supervisor = start_supervisor("WORKER", children=1)
    pending = Job.objects.filter(pk__in=ids)

    def finished() -> int:
        return pending.filter(finished_at__isnull=False).count()

    for _ in range(5):
        before = finished()
        wait_until(lambda before=before: finished() > before, what="a limited job to finish")
        worker = wait_until(
            lambda: Process.objects.filter(kind=Process.Kind.WORKER).first(), what="a worker"
        )
        os.kill(worker.pid, signal.SIGKILL)
        wait_until(
            lambda pid=worker.pid: not Process.objects.filter(pid=pid).exists(),
            what="the killed worker to be cleaned up",
        )

    def all_ended() -> bool:
        ended = finished() + FailedExecution.objects.filter(job_id__in=ids).count()
        return ended == len(ids)

    wait_until(all_ended, timeout=60, what="every limited job to end")
    assert not BlockedExecution.objects.exists()
    assert not ClaimedExecution.objects.exists()
    assert Semaphore.objects.get(key=Job.objects.get(pk=ids[0]).concurrency_key).value == 1
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
