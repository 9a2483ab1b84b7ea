"""Issue 9, defects 3 and 5 in-process: a release by hand, and a pruned worker.

For the release, workers are played by the test: it claims what is ready, as a worker
with threads to spare would, and finishes the oldest running job, one step at a time.
A pruned worker claims nothing, and starts nothing it claimed before it was pruned.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest

import steady_queue
from steady_queue import storage
from steady_queue.models import ClaimedExecution, Job, Process, Semaphore
from steady_queue.processes.heartbeat import Heartbeat
from steady_queue.processes.worker import Worker
from steady_queue.runner.perform import perform
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def claim_everything(process: Process | None = None) -> list[ClaimedExecution]:
    return storage.claim(["*"], 100, process)


def test_a_job_released_by_hand_never_lets_later_jobs_over_the_limit():
    results = [tasks.exclusive.enqueue(i) for i in range(6)]  # to=1: one ready, five blocked
    running = claim_everything()
    by_hand = int(results[1].id)
    Job.objects.get(pk=by_hand).release(force=True)  # the dashboard's Release, while the first runs
    running += claim_everything()
    assert [c.job_id for c in running] == [int(results[0].id), by_hand]  # over, as asked

    others_at_once = []  # jobs running at once, besides the one released by hand
    while running:
        others_at_once.append(sum(c.job_id != by_hand for c in running))
        perform(running.pop(0))  # the oldest finishes
        running += claim_everything()

    assert max(others_at_once) == 1  # never more than to=1, whenever it finished
    assert Job.objects.filter(finished_at__isnull=False).count() == 6
    assert Semaphore.objects.get(key__endswith="/exclusive").value == 1  # every slot back


def test_releasing_by_hand_takes_a_slot_so_the_key_stays_full_until_two_finish():
    _first, second, third = (tasks.exclusive.enqueue(i) for i in range(3))
    assert Job.objects.get(pk=second.id).release(force=True)
    assert Semaphore.objects.get(key__endswith="/exclusive").value == -1  # two hold it, to=1
    [claimed_first] = storage.claim(["*"], 1, None)
    perform(claimed_first)
    assert Job.objects.get(pk=third.id).state == "blocked"  # the released one still holds it
    for claimed in claim_everything():
        perform(claimed)
    assert Job.objects.get(pk=third.id).state == "ready"


def test_releasing_by_hand_with_a_slot_free_takes_that_slot():
    tasks.exclusive.enqueue(0)
    blocked = tasks.exclusive.enqueue(1)
    Semaphore.objects.filter(key__endswith="/exclusive").update(value=1)  # a slot came back
    assert Job.objects.get(pk=blocked.id).state == "blocked"
    assert Job.objects.get(pk=blocked.id).release()
    assert Semaphore.objects.get(key__endswith="/exclusive").value == 0


def registered_process() -> Process:
    return Process.register(
        kind=Process.Kind.WORKER, name="worker-test", pid=os.getpid(), hostname=socket.gethostname()
    )


def test_a_pruned_process_claims_nothing():
    ready = [tasks.exclusive.enqueue(0), tasks.paired.enqueue(1)]
    process = registered_process()
    Process.objects.filter(pk=process.pk).delete()  # pruned while it was frozen
    assert claim_everything(process) == []
    assert ClaimedExecution.objects.count() == 0
    assert [Job.objects.get(pk=r.id).state for r in ready] == ["ready", "ready"]


def test_a_registered_process_claims_as_before():
    tasks.exclusive.enqueue(0)
    process = registered_process()
    [claimed] = claim_everything(process)
    assert ClaimedExecution.objects.get().process_id == process.pk == claimed.process_id


class Owner:
    """What a Heartbeat uses of the process it keeps alive."""

    name = "worker-test"

    def __init__(self, process: Process):
        self.process = process
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def live_metadata(self) -> None:
        return None


def test_a_process_knows_at_once_on_resuming_that_it_was_pruned(
    monkeypatch, django_assert_num_queries
):
    owner = Owner(registered_process())
    heartbeat = Heartbeat(owner, interval=60)
    Process.objects.filter(pk=owner.process.pk).delete()  # pruned
    with django_assert_num_queries(0):
        assert heartbeat.confirm()  # its last beat is recent: nobody can have pruned it
    # Frozen for longer than half the alive threshold: it asks before it starts anything.
    monkeypatch.setattr(steady_queue, "process_alive_threshold", timedelta(0))
    assert not heartbeat.confirm()
    assert owner.stopped


def test_a_stale_heartbeat_that_finds_its_row_beats_again(monkeypatch):
    owner = Owner(registered_process())
    heartbeat = Heartbeat(owner, interval=60)
    monkeypatch.setattr(steady_queue, "process_alive_threshold", timedelta(0))
    before = Process.objects.get(pk=owner.process.pk).last_heartbeat_at
    assert heartbeat.confirm() and not owner.stopped
    assert Process.objects.get(pk=owner.process.pk).last_heartbeat_at > before


class PrunedWhileClaiming(Worker):
    """A worker frozen just after its claim, and pruned before it could start the jobs."""

    def _claim(self, wanted: int) -> list[ClaimedExecution]:
        claimed = super()._claim(wanted)
        assert Process.prune() == 1  # its jobs fail, its row goes
        return claimed


@pytest.mark.django_db(transaction=True)
def test_a_worker_pruned_between_claim_and_start_starts_nothing(monkeypatch):
    monkeypatch.setattr(steady_queue, "process_alive_threshold", timedelta(0))
    jobs = [tasks.paired.enqueue(n) for n in range(2)]
    worker = PrunedWhileClaiming(queues=["*"], threads=2)  # its threads are not started
    worker.process = registered_process()
    worker._heartbeat = Heartbeat(worker, interval=60)
    worker.poll()
    assert worker.pool.idle_threads == 2  # nothing was handed to a thread
    assert worker.stopping  # it knows it was pruned: it exits, and is replaced
    assert [Job.objects.get(pk=r.id).state for r in jobs] == ["failed", "failed"]
