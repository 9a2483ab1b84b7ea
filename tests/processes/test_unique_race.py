"""Eight processes enqueue the same unique key at the same instant: one job per key."""

from __future__ import annotations

import multiprocessing
import queue

import pytest
from django.db import connection, connections

from steady_queue.models import Job, UniqueLock
from tests.scenarios.unique_race import enqueue_rounds
from tests.tasks import unique as tasks

PROCESSES = 8
ROUNDS = 100


@pytest.mark.django_db(transaction=True)
def test_processes_racing_for_one_key_enqueue_exactly_one_job_per_round():
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no shared sockets
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    environment = {
        "DJANGO_SETTINGS_MODULE": "tests.processes.settings",
        "SQ_PROCESS_DB_NAME": str(connection.settings_dict["NAME"]),
    }
    workers = [
        context.Process(target=enqueue_rounds, args=(environment, ROUNDS, barrier, results))
        for _ in range(PROCESSES)
    ]
    connections.close_all()
    for worker in workers:
        worker.start()
    try:
        reports = [_report(results) for _ in workers]
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()

    rounds = list(zip(*reports, strict=True))
    assert all(len(set(ids)) == 1 for ids in rounds), "a round returned several jobs"
    jobs = Job.objects.filter(task_path=tasks.sync_account.module_path)
    assert jobs.count() == ROUNDS
    assert sorted(int(ids[0]) for ids in rounds) == sorted(jobs.values_list("pk", flat=True))
    assert UniqueLock.objects.count() == ROUNDS


def _report(results) -> list[str]:
    try:
        pid, ids, failure = results.get(timeout=300)
    except queue.Empty:
        raise AssertionError("A racing process sent no report within 300 s") from None
    assert failure is None, f"process {pid} failed:\n{failure}"
    return ids


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_frees_the_key_of_the_job_it_ran(start_supervisor):
    from tests.processes.conftest import wait_until

    first = tasks.sync_account.enqueue(7)
    held_for_a_period = tasks.digest.enqueue(7)
    start_supervisor("WORKER", children=1)

    wait_until(lambda: Job.objects.filter(finished_at__isnull=False).count() == 2, what="2 runs")

    assert tasks.sync_account.enqueue(7).id != first.id
    assert tasks.digest.enqueue(7).id == held_for_a_period.id  # within its hour
