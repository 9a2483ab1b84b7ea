"""Release by hand, as in Solid Queue: a blocked job runs only in a free slot, unless forced."""

from __future__ import annotations

import pytest

from steady_queue.exceptions import JobStateError
from steady_queue.models import BlockedExecution, Job, Semaphore
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def state(result) -> str:
    return Job.objects.with_execution().get(pk=result.id).state


def job(result) -> Job:
    return Job.objects.get(pk=result.id)


def free_slots(suffix: str) -> int:
    return Semaphore.objects.get(key__endswith=suffix).value


def test_release_leaves_the_job_blocked_while_every_slot_is_held():
    tasks.exclusive.enqueue(1)
    blocked = tasks.exclusive.enqueue(2)

    assert job(blocked).release() is False

    assert state(blocked) == "blocked"
    assert free_slots("/exclusive") == 0


def test_release_takes_a_free_slot():
    tasks.exclusive.enqueue(1)
    blocked = tasks.exclusive.enqueue(2)
    Semaphore.objects.filter(key__endswith="/exclusive").update(value=1)  # a slot came back

    assert job(blocked).release() is True

    assert state(blocked) == "ready"
    assert free_slots("/exclusive") == 0


def test_release_with_force_runs_the_job_over_the_limit():
    tasks.exclusive.enqueue(1)
    blocked = tasks.exclusive.enqueue(2)

    assert job(blocked).release(force=True) is True

    assert state(blocked) == "ready"
    assert free_slots("/exclusive") == -1  # two hold the key's one slot


def test_release_of_a_job_that_is_not_blocked_says_so():
    ready = tasks.exclusive.enqueue(1)
    with pytest.raises(JobStateError, match="is ready: only blocked jobs can be released"):
        job(ready).release()
    with pytest.raises(JobStateError, match="only blocked jobs"):
        job(ready).release(force=True)


def test_release_all_fills_only_the_free_slots_highest_priority_first():
    [tasks.paired.enqueue(n) for n in range(2)]  # to=2: both slots taken
    low = [tasks.paired.enqueue(n) for n in range(2, 4)]
    high = tasks.paired.using(priority=5).enqueue(4)
    Semaphore.objects.filter(key__endswith="/pair").update(value=1)

    assert Job.objects.release_all() == 1

    assert state(high) == "ready"
    assert [state(r) for r in low] == ["blocked", "blocked"]
    assert free_slots("/pair") == 0


def test_release_all_with_force_releases_every_blocked_job_of_the_queryset():
    [tasks.exclusive.enqueue(n) for n in range(4)]
    kept = tasks.per_account.enqueue("a")
    other = tasks.per_account.enqueue("a")

    chosen = Job.objects.filter(task_path=job(kept).task_path.replace("per_account", "exclusive"))
    assert chosen.release_all(force=True, batch_size=2) == 3

    assert free_slots("/exclusive") == -3
    assert state(other) == "blocked"  # not of the queryset
    assert not BlockedExecution.objects.exclude(job_id=other.id).exists()


def test_release_all_releases_per_key_where_that_key_has_a_slot():
    tasks.per_account.enqueue("a")
    tasks.per_account.enqueue("b")
    blocked_a = tasks.per_account.enqueue("a")
    blocked_b = tasks.per_account.enqueue("b")
    Semaphore.objects.filter(key__endswith="/b").update(value=1)

    assert Job.objects.release_all() == 1

    assert (state(blocked_a), state(blocked_b)) == ("blocked", "ready")
