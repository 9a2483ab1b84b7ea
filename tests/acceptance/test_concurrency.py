"""docs/reference/concurrency.md (@limits_concurrency), checked in-process."""

from __future__ import annotations

import pytest

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import TaskResultDoesNotExist, TaskResultStatus
from tests.models import Account
from tests.tasks.acceptance import (
    contact_a,
    contact_b,
    deliver_announcement,
    keyed_by_model,
    limited_and_flaky,
    one_at_a_time,
    one_at_a_time_failing,
    seen,
    unique_while_queued,
)

pytestmark = pytest.mark.django_db


def state(result) -> str:
    return Job.objects.get(pk=result.id).state


def test_extra_jobs_with_the_same_key_wait_as_blocked():
    first, second, third = (one_at_a_time.enqueue("k") for _ in range(3))
    other = one_at_a_time.enqueue("other key")
    assert [state(r) for r in (first, second, third, other)] == [
        "ready",
        "blocked",
        "blocked",
        "ready",
    ]
    # A blocked job's result is READY.
    assert one_at_a_time.get_result(second.id).status == TaskResultStatus.READY


def test_finishing_releases_the_next_blocked_job_highest_priority_first():
    one_at_a_time.enqueue("k")
    low = one_at_a_time.using(priority=-10).enqueue("k")
    high = one_at_a_time.using(priority=10).enqueue("k")
    [_first] = run_ready_jobs(max_jobs=1)
    assert state(high) == "ready" and state(low) == "blocked"
    run_ready_jobs()
    assert state(low) == "finished"
    order = [r.id for r in Job.objects.order_by("finished_at", "pk")]
    assert order.index(int(high.id)) < order.index(int(low.id))


def test_to_two_admits_exactly_two():
    # deliver_announcement's key is contact.account_id, to=2 (the docs' example).
    accounts = [Account.objects.create(name=f"a{i}") for i in range(1)]
    results = [deliver_announcement.enqueue(accounts[0]) for _ in range(4)]
    assert sorted(state(r) for r in results) == ["blocked", "blocked", "ready", "ready"]


def test_failure_gives_the_slot_back():
    failing = one_at_a_time_failing.enqueue("k")
    waiting = one_at_a_time_failing.enqueue("k")
    assert state(waiting) == "blocked"
    run_ready_jobs(max_jobs=1)
    assert state(failing) == "failed"
    assert state(waiting) == "ready"


def test_discard_on_conflict_drops_the_duplicates():
    kept = unique_while_queued.enqueue(1)
    dropped = unique_while_queued.enqueue(2)  # no error at enqueue
    assert dropped.status == TaskResultStatus.READY
    with pytest.raises(TaskResultDoesNotExist):
        unique_while_queued.get_result(dropped.id)
    run_ready_jobs()
    assert seen("unique_while_queued") == [1]
    assert unique_while_queued.get_result(kept.id).status == TaskResultStatus.SUCCESSFUL
    # Once the holder finished, the key is free again ("unique while queued or running").
    again = unique_while_queued.enqueue(3)
    assert state(again) == "ready"


def test_group_shares_keys_between_tasks():
    a = contact_a.enqueue(7)
    b = contact_b.enqueue(7)
    other = contact_b.enqueue(8)
    assert (state(a), state(b), state(other)) == ("ready", "blocked", "ready")
    run_ready_jobs()
    assert state(b) == "finished"


def test_model_instance_returned_as_key_is_keyed_by_model_and_pk():
    first, second = Account.objects.create(name="same"), Account.objects.create(name="same")
    a = keyed_by_model.enqueue(first)
    b = keyed_by_model.enqueue(first)
    c = keyed_by_model.enqueue(second)  # same __str__ but another row
    assert (state(a), state(b), state(c)) == ("ready", "blocked", "ready")


def test_discarding_a_ready_limited_job_gives_its_slot_to_the_next():
    holder = one_at_a_time.enqueue("k")
    waiting = one_at_a_time.enqueue("k")
    Job.objects.get(pk=holder.id).discard()
    assert state(waiting) == "ready"


def test_release_waits_for_a_slot_unless_forced():
    one_at_a_time.enqueue("k")
    waiting = one_at_a_time.enqueue("k")
    assert Job.objects.get(pk=waiting.id).release() is False
    assert state(waiting) == "blocked"
    assert Job.objects.get(pk=waiting.id).release(force=True) is True
    assert state(waiting) == "ready"


def test_retried_job_queues_for_a_slot_again():
    first = limited_and_flaky.enqueue("first")
    second = limited_and_flaky.enqueue("second")
    assert state(second) == "blocked"
    run_ready_jobs(max_jobs=1)  # first fails, will retry; second takes the slot
    assert state(first) == "scheduled"
    assert state(second) == "ready"
    run_ready_jobs(include_scheduled=True)
    assert state(first) == "failed" and state(second) == "failed"
    assert seen("limited_and_flaky").count("first") == 2


def test_default_duration_is_the_module_setting(monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    import steady_queue
    from steady_queue.models import Semaphore

    one_at_a_time.enqueue("three minutes")
    [semaphore] = Semaphore.objects.filter(key__contains="three minutes")
    expected = timezone.now() + timedelta(minutes=3)
    assert abs((semaphore.expires_at - expected).total_seconds()) < 5

    monkeypatch.setattr(steady_queue, "default_concurrency_control_period", timedelta(minutes=9))
    one_at_a_time.enqueue("nine minutes")
    [semaphore] = Semaphore.objects.filter(key__contains="nine minutes")
    expected = timezone.now() + timedelta(minutes=9)
    assert abs((semaphore.expires_at - expected).total_seconds()) < 5
