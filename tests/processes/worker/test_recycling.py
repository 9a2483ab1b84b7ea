"""Worker recycling with the real supervisor: replaced workers lose and repeat no job."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from steady_queue.models import FailedExecution, Job, Process, ReadyExecution
from tests.processes.conftest import finished_count, wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_recycling_after_10_jobs_over_1000_jobs_loses_and_repeats_none(start_supervisor, run_log):
    labels = [f"job-{n}" for n in range(1000)]
    for label in labels:
        tasks.record.enqueue(str(run_log.path), label)
    supervisor = start_supervisor("RECYCLE_AFTER_JOBS", children=2)

    wait_until(lambda: finished_count() == 1000, timeout=240, what="1,000 finished jobs")

    assert sorted(run_log.entries()) == sorted(labels)  # each ran once
    assert not FailedExecution.objects.exists() and not ReadyExecution.objects.exists()
    runs = [attempts for attempts in Job.objects.values_list("attempts", flat=True)]
    assert all(len(attempts) == 1 for attempts in runs)
    per_worker = Counter(attempts[0]["worker_id"] for attempts in runs)
    # Claims in flight count against the bound: no worker starts an eleventh job.
    assert max(per_worker.values()) == 10, per_worker.most_common(3)
    # At most 10 each, so at least 100 workers; the last two processes share the tail.
    assert len(per_worker) >= 100
    assert "recycled after 10 jobs; starting another" in supervisor.output()
    replaced = wait_until(
        lambda: [w for w in supervisor.children(Process.Kind.WORKER) if "replaced" in w.metadata],
        what="a worker that replaced a recycled one",
    )
    assert replaced[0].metadata["replaced"]["reason"] == "recycled after 10 jobs"
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0


def test_a_worker_above_its_memory_bound_is_replaced_after_its_job(start_supervisor, run_log):
    supervisor = start_supervisor("RECYCLE_ABOVE_MEMORY", children=1)
    first = supervisor.children(Process.Kind.WORKER)[0]
    for label in ("a", "b", "c"):
        tasks.record.enqueue(str(run_log.path), label)

    wait_until(lambda: finished_count() == 3, timeout=60, what="3 finished jobs")

    assert sorted(run_log.entries()) == ["a", "b", "c"]
    assert len(run_log.pids()) == 3  # every job in a fresh worker process
    worker = wait_until(
        lambda: [w for w in supervisor.children(Process.Kind.WORKER) if w.pk != first.pk],
        what="the replacement worker",
    )[0]
    assert worker.metadata["recycle_above_memory"] == 1
    assert worker.metadata["replaced"]["reason"] == "recycled above 1 MiB of memory"
    assert "at " in supervisor.output() and "above 1 MiB: it claims no more" in supervisor.output()
