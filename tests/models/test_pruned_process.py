"""A pruned worker claims nothing, and starts nothing it claimed before it was pruned; a
heartbeat knows on resuming whether its process was pruned (issue 9, defect 5)."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest

import steady_queue
from steady_queue import storage
from steady_queue.models import ClaimedExecution, Job, Process
from steady_queue.processes.heartbeat import Heartbeat
from steady_queue.processes.worker import Worker
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def claim_everything(process: Process | None = None) -> list[ClaimedExecution]:
    return storage.claim(["*"], 100, process)


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
