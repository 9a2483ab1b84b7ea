"""Release by hand, forced or into a free slot: the concurrency limit still holds for the
jobs behind it (issue 9, defect 3). Workers are played by the test: it claims what is
ready, as a worker with threads to spare would, and finishes the oldest running job, one
step at a time.
"""

from __future__ import annotations

import pytest

from steady_queue import storage
from steady_queue.models import ClaimedExecution, Job, Process, Semaphore
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
