"""Concurrency limits in-process: semaphores, blocking, discarding, groups, maintenance."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from functools import partial

import pytest
from django.db import connections
from django.utils import timezone

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.compat import TaskResultStatus
from steady_queue.models import BlockedExecution, ClaimedExecution, Job, Semaphore
from steady_queue.processes.dispatcher import run_concurrency_maintenance
from steady_queue.processes.errors import ProcessExitError
from steady_queue.task_options.concurrency import ConcurrencyLimit, limit_for
from steady_queue.testing import run_ready_jobs
from tests import tasks as foundation_tasks
from tests.models import Account
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def states(results) -> list[str]:
    jobs = Job.objects.with_execution().in_bulk([r.id for r in results])
    return [jobs[int(r.id)].state for r in results]


def semaphore(key_suffix: str) -> Semaphore:
    return Semaphore.objects.get(key__endswith=key_suffix)


def test_one_job_per_key_runs_and_the_others_wait():
    results = [tasks.exclusive.enqueue(i) for i in range(20)]
    assert states(results) == ["ready"] + ["blocked"] * 19
    assert semaphore("/exclusive").value == 0


def test_each_finish_lets_exactly_the_next_one_in():
    results = [tasks.exclusive.enqueue(i) for i in range(20)]
    ran = run_ready_jobs()
    assert [r.args[0] for r in ran] == list(range(20))
    assert {r.status for r in ran} == {TaskResultStatus.SUCCESSFUL}
    assert not BlockedExecution.objects.exists()
    assert semaphore("/exclusive").value == 1
    assert len(results) == 20


def test_to_two_lets_exactly_two_in():
    results = [tasks.paired.enqueue(i) for i in range(20)]
    assert states(results) == ["ready"] * 2 + ["blocked"] * 18


def test_different_keys_do_not_wait_for_each_other():
    results = [tasks.per_account.enqueue(account) for account in ("a", "b", "c")]
    assert states(results) == ["ready"] * 3


def test_discard_on_conflict_drops_the_duplicates():
    for index in range(5):
        tasks.deduplicated.enqueue(index)
    assert list(Job.objects.values_list("arguments__args", flat=True)) == [[0]]


def test_blocked_jobs_are_released_by_priority():
    tasks.exclusive.enqueue(0)
    low = tasks.exclusive.using(priority=-5).enqueue(1)
    high = tasks.exclusive.using(priority=50).enqueue(2)
    run_ready_jobs(max_jobs=1)
    assert states([low, high]) == ["blocked", "ready"]


def test_a_failure_releases_the_key_too():
    first = tasks.fragile.enqueue(True)
    second = tasks.fragile.enqueue(False)
    run_ready_jobs(max_jobs=1)
    assert states([first, second]) == ["failed", "ready"]


def test_a_group_shares_one_limit_across_tasks_keyed_by_model_instance():
    account, other = Account.objects.create(name="a"), Account.objects.create(name="b")
    billed = tasks.bill_account.enqueue(account)
    notified = tasks.notify_account.enqueue(account)
    elsewhere = tasks.notify_account.enqueue(other)
    assert states([billed, notified, elsewhere]) == ["ready", "blocked", "ready"]
    assert Job.objects.get(pk=billed.id).concurrency_key == f"accounts/tests.account:{account.pk}"


def test_bulk_enqueue_honours_limits():
    calls = [(tasks.exclusive, (i,), {}) for i in range(5)]
    calls += [(foundation_tasks.noop, (), {})] + [(tasks.paired, (i,), {}) for i in range(3)]
    results = enqueue_all(calls)
    assert states(results) == ["ready"] + ["blocked"] * 4 + ["ready"] * 3 + ["blocked"]


def test_maintenance_releases_a_key_whose_holder_never_signalled():
    tasks.short_lease.enqueue()
    waiting = tasks.short_lease.enqueue()
    storage.claim(["*"], 1, None)  # its worker then vanishes without a word
    run_concurrency_maintenance(batch_size=10)
    assert states([waiting]) == ["blocked"]
    past = timezone.now() - timedelta(seconds=1)
    Semaphore.objects.update(expires_at=past)
    BlockedExecution.objects.update(expires_at=past)
    assert run_concurrency_maintenance(batch_size=10) == 1
    assert states([waiting]) == ["ready"]
    assert semaphore("/short").value == 0


def test_maintenance_leaves_blocked_jobs_whose_key_is_still_held():
    tasks.short_lease.enqueue()
    waiting = tasks.short_lease.enqueue()
    BlockedExecution.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert run_concurrency_maintenance(batch_size=10) == 0
    assert states([waiting]) == ["blocked"]


def test_a_crashed_worker_s_job_gives_its_key_back():
    tasks.exclusive.enqueue(0)
    waiting = tasks.exclusive.enqueue(1)
    claims = ClaimedExecution.objects.filter(pk__in=[c.pk for c in storage.claim(["*"], 1, None)])
    ClaimedExecution.fail_all_with(claims, ProcessExitError("killed"))
    assert states([waiting]) == ["ready"]


def test_options_are_found_even_before_the_task_module_is_imported():
    import sys

    from steady_queue.task_options.retries import policy_for

    assert "tests.tasks.late" not in sys.modules
    assert limit_for("tests.tasks.late.late").to == 4
    assert policy_for("tests.tasks.late.late").attempts == 7


def race(workers: int, body) -> None:
    barrier = threading.Barrier(workers)

    def run():
        try:
            barrier.wait(10)
            body()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("to", [1, 2])
def test_racing_waits_on_separate_connections_never_take_more_than_the_limit(to):
    limit = ConcurrencyLimit(key="race", to=to, group="race")
    for _ in range(5):
        Semaphore.objects.all().delete()
        taken: list[bool] = []
        race(6, partial(_wait_into, taken, limit))
        assert taken.count(True) == to
        assert Semaphore.objects.get().value == 0


def _wait_into(taken: list[bool], limit: ConcurrencyLimit) -> None:
    taken.append(Semaphore.wait("race/race", limit))


@pytest.mark.django_db(transaction=True)
def test_holders_never_exceed_the_limit_while_waiting_and_signalling():
    limit = ConcurrencyLimit(key="churn", to=2, group="churn")
    lock, holders, peak, rounds = threading.Lock(), [0], [0], []

    def churn():
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if not Semaphore.wait("churn/churn", limit):
                continue
            with lock:
                holders[0] += 1
                peak[0] = max(peak[0], holders[0])
            time.sleep(0.005)
            with lock:
                holders[0] -= 1
                rounds.append(1)
            Semaphore.signal("churn/churn", limit)

    race(4, churn)
    assert peak[0] <= 2
    assert len(rounds) > 10
    assert Semaphore.objects.get().value == 2
