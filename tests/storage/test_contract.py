"""What every storage promises: enqueue, claim, finish (and claim the next), wake-ups.

Each test runs once per storage available on the database under test (see conftest):
the portable ORM storage everywhere, and the fast storage of that database beside it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from steady_queue import storage
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    Pause,
    ReadyExecution,
    ScheduledExecution,
    UniqueLock,
)
from steady_queue.models.execution.claimed_finish import Failure, Success
from tests import tasks
from tests.tasks import features as limited_tasks
from tests.tasks import unique as unique_tasks

pytestmark = pytest.mark.django_db(transaction=True)


def job_for(task, *args, **kwargs) -> Job:
    return Job.for_task_call(task, args, kwargs, backend="default")


def enqueued(store, *calls) -> list[Job]:
    return store.enqueue([job_for(task, *args) for task, *args in calls])


def state_of(job: Job) -> str:
    return Job.objects.with_execution().get(pk=job.pk).state


# Enqueue ----------------------------------------------------------------------------------


def test_enqueue_stores_a_due_job_ready_with_its_queue_and_priority(store):
    (job,) = enqueued(store, (tasks.add.using(priority=7, queue_name="beta_one"), 1, 2))

    assert job.pk is not None and not job._state.adding
    ready = ReadyExecution.objects.get(job_id=job.pk)
    assert (ready.queue_name, ready.priority) == ("beta_one", 7)
    assert Job.objects.get(pk=job.pk).arguments == job.arguments


def test_enqueue_of_many_numbers_them_in_order_all_ready(store):
    jobs = enqueued(store, *[(tasks.add, i, i) for i in range(30)])

    ids = [job.pk for job in jobs]
    assert ids == sorted(ids) and len(set(ids)) == 30
    assert set(ReadyExecution.objects.values_list("job_id", flat=True)) == set(ids)
    stored = dict(Job.objects.values_list("pk", "arguments"))
    assert [stored[pk]["args"] for pk in ids] == [[i, i] for i in range(30)]


def test_enqueue_of_a_later_job_schedules_it(store):
    (job,) = enqueued(store, (tasks.add.using(run_after=timedelta(hours=1)), 1, 2))

    assert ScheduledExecution.objects.filter(job_id=job.pk).exists()
    assert not ReadyExecution.objects.exists()


def test_enqueue_of_limited_jobs_blocks_the_one_over_the_limit(store):
    first, second = enqueued(store, (limited_tasks.exclusive, 1), (limited_tasks.exclusive, 2))

    assert (state_of(first), state_of(second)) == ("ready", "blocked")


def test_enqueue_of_a_unique_duplicate_returns_the_job_holding_the_key(store):
    (first,) = enqueued(store, (unique_tasks.sync_account, 7))

    new, duplicate = enqueued(store, (unique_tasks.sync_account, 8), (unique_tasks.sync_account, 7))

    assert duplicate.pk == first.pk and new.pk not in (None, first.pk)
    assert Job.objects.count() == 2 and UniqueLock.objects.count() == 2


# Claim ------------------------------------------------------------------------------------


def test_claim_takes_the_best_jobs_first_for_the_process(store, process):
    jobs = enqueued(store, *[(tasks.add.using(priority=p), p, 0) for p in (0, 5, -3, 5)])
    before = timezone.now()

    claimed = store.claim(["*"], 3, process)

    assert [c.job_id for c in claimed] == [jobs[1].pk, jobs[3].pk, jobs[0].pk]
    assert [c.job.priority for c in claimed] == [5, 5, 0]
    rows = ClaimedExecution.objects.order_by("job_id")
    assert [(row.job_id, row.process_id) for row in rows] == sorted(
        (c.job_id, process.pk) for c in claimed
    )
    assert all(row.created_at >= before for row in rows)
    assert list(ReadyExecution.objects.values_list("job_id", flat=True)) == [jobs[2].pk]


def test_claim_reads_exact_queues_in_their_order(store, process):
    low, high, other = enqueued(
        store,
        (tasks.add.using(queue_name="low", priority=9), 1, 1),
        (tasks.add.using(queue_name="real_time"), 2, 2),
        (tasks.add.using(queue_name="other"), 3, 3),
    )

    claimed = store.claim(["real_time", "low"], 5, process)

    assert [c.job_id for c in claimed] == [high.pk, low.pk]
    assert state_of(other) == "ready"


def test_claim_reads_prefix_wildcards(store, process):
    beta_one, beta_two, other = enqueued(
        store,
        (tasks.add.using(queue_name="beta_one"), 1, 1),
        (tasks.add.using(queue_name="beta_two"), 2, 2),
        (tasks.add.using(queue_name="other"), 3, 3),
    )

    claimed = store.claim(["beta*"], 5, process)

    assert sorted(c.job_id for c in claimed) == [beta_one.pk, beta_two.pk]
    assert state_of(other) == "ready"


@pytest.mark.parametrize("queues", [["*"], ["low", "other"], ["lo*", "other"]])
def test_claim_skips_paused_queues(store, process, queues):
    paused, open_ = enqueued(
        store,
        (tasks.add.using(queue_name="low", priority=9), 1, 1),
        (tasks.add.using(queue_name="other"), 2, 2),
    )
    Pause.objects.create(queue_name="low")

    claimed = store.claim(queues, 5, process)

    assert [c.job_id for c in claimed] == [open_.pk]
    assert state_of(paused) == "ready"


def test_claim_respects_the_limit_and_an_empty_queue(store, process):
    enqueued(store, *[(tasks.add, i, i) for i in range(3)])

    assert len(store.claim(["*"], 2, process)) == 2
    assert len(store.claim(["*"], 2, process)) == 1
    assert store.claim(["*"], 2, process) == []


def test_a_pruned_process_claims_nothing(store, process):
    (job,) = enqueued(store, (tasks.add, 1, 1))
    process.delete()

    assert store.claim(["*"], 5, process) == []
    assert state_of(job) == "ready"


def test_claims_link_job_and_claim_without_refetching(store, process):
    enqueued(store, (tasks.add, 1, 1))
    (claimed,) = store.claim(["*"], 1, process)

    with CaptureQueriesContext(connections["default"]) as queries:
        assert claimed.job.claimed_execution is claimed
        assert claimed.job.state == "running"
    assert len(queries) == 0


# Finish -----------------------------------------------------------------------------------


def test_finish_records_a_success_once(store, process):
    (job,) = enqueued(store, (tasks.add, 1, 2))
    (claimed,) = store.claim(["*"], 1, process)

    finished = store.finish(claimed, Success(3))

    assert (finished.recorded, finished.claimed, finished.claim_failed) == (True, None, False)
    stored = Job.objects.get(pk=job.pk)
    assert stored.finished_at is not None and stored.return_value == 3
    assert len(stored.attempts) == 1 and stored.attempts[0]["error"] is None
    assert stored.attempts[0]["worker_id"] == "contract"
    assert not ClaimedExecution.objects.exists()
    assert claimed.job.finished_at == stored.finished_at  # the instance knows it too


def test_finishing_a_lost_claim_changes_nothing(store, process):
    (job,) = enqueued(store, (tasks.add, 1, 2))
    (claimed,) = store.claim(["*"], 1, process)
    ClaimedExecution.objects.filter(job_id=job.pk).delete()  # failed by a supervisor meanwhile

    finished = store.finish(claimed, Success(3))

    assert not finished.recorded
    stored = Job.objects.get(pk=job.pk)
    assert stored.finished_at is None and stored.attempts == []


def test_finish_then_claim_hands_the_thread_its_next_job(store, process):
    first, second = enqueued(store, (tasks.add, 1, 1), (tasks.add, 2, 2))
    (claimed,) = store.claim(["*"], 1, process)
    asked = []

    def allowed():
        asked.append(True)
        return True

    then = storage.ClaimNext(["*"], process, allowed=allowed)
    finished = store.finish(claimed, Success(2), then_claim=then)

    assert finished.recorded and not finished.claim_failed
    assert [c.job_id for c in finished.claimed] == [second.pk]
    assert asked == [True]  # asked once, just before
    assert ClaimedExecution.objects.get().job_id == second.pk
    assert ClaimedExecution.objects.get().process_id == process.pk
    assert Job.objects.get(pk=first.pk).finished_at is not None


def test_a_claim_not_allowed_is_not_made(store, process):
    enqueued(store, (tasks.add, 1, 1), (tasks.add, 2, 2))
    (claimed,) = store.claim(["*"], 1, process)
    asked = []

    then = storage.ClaimNext(["*"], process, allowed=lambda: asked.append(True) or False)
    finished = store.finish(claimed, Success(2), then_claim=then)

    assert finished.recorded and finished.claimed is None and not finished.claim_failed
    assert asked == [True]
    assert not ClaimedExecution.objects.exists() and ReadyExecution.objects.count() == 1


def test_finish_then_claim_reads_the_workers_queues(store, process):
    enqueued(
        store,
        (tasks.add.using(queue_name="low"), 1, 1),
        (tasks.add.using(queue_name="background", priority=9), 2, 2),
        (tasks.add.using(queue_name="other"), 3, 3),
    )
    (claimed,) = store.claim(["low"], 1, process)

    then = storage.ClaimNext(["other", "low"], process)
    finished = store.finish(claimed, Success(None), then_claim=then)

    assert [c.job.queue_name for c in finished.claimed] == ["other"]


def test_finish_then_claim_with_nothing_left_claims_nothing(store, process):
    enqueued(store, (tasks.add, 1, 1))
    (claimed,) = store.claim(["*"], 1, process)

    finished = store.finish(claimed, Success(2), then_claim=storage.ClaimNext(["*"], process))

    assert finished.recorded and finished.claimed == []


def test_a_failure_is_recorded_and_the_next_job_claimed(store, process):
    broken, following = enqueued(store, (tasks.explode, "boom"), (tasks.add, 1, 1))
    (claimed,) = store.claim(["*"], 1, process)

    finished = store.finish(
        claimed, Failure(ValueError("boom")), then_claim=storage.ClaimNext(["*"], process)
    )

    assert finished.recorded
    assert FailedExecution.objects.get().job_id == broken.pk
    assert [c.job_id for c in finished.claimed] == [following.pk]


def test_a_limited_success_hands_its_slot_to_the_next_blocked_job(store, process):
    first, second = enqueued(store, (limited_tasks.exclusive, 1), (limited_tasks.exclusive, 2))
    (claimed,) = store.claim(["*"], 1, process)

    finished = store.finish(claimed, Success([0.0, 0.0]))

    assert finished.recorded
    assert Job.objects.get(pk=first.pk).finished_at is not None
    assert state_of(second) == "ready"
    assert not BlockedExecution.objects.exists()


def test_a_unique_success_gives_its_key_back(store, process):
    enqueued(store, (unique_tasks.sync_account, 7))
    (claimed,) = store.claim(["*"], 1, process)

    finished = store.finish(claimed, Success(7))

    assert finished.recorded and not UniqueLock.objects.exists()
    (again,) = enqueued(store, (unique_tasks.sync_account, 7))
    assert again.pk != claimed.job_id


def test_a_finish_that_fails_to_claim_says_so_and_keeps_the_outcome(store, process, monkeypatch):
    enqueued(store, (tasks.add.using(queue_name="low"), 1, 1), (tasks.add, 2, 2))
    (claimed,) = store.claim(["low"], 1, process)

    def broken_claim(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    # Several queues: every storage claims the next job in a statement of its own.
    monkeypatch.setattr(type(store), "claim", broken_claim)
    finished = store.finish(
        claimed, Success(2), then_claim=storage.ClaimNext(["low", "other"], process)
    )

    assert finished.recorded and finished.claimed is None and finished.claim_failed
    assert Job.objects.filter(finished_at__isnull=False).count() == 1


# Wake-ups ---------------------------------------------------------------------------------


def test_wake_ups_are_sent_only_by_a_storage_that_has_them(store):
    with CaptureQueriesContext(connections["default"]) as queries:
        store.notify_ready(["default"])
        store.notify_scheduled(timezone.now())

    sent = [q["sql"] for q in queries if "pg_notify" in q["sql"]]
    assert len(sent) == (2 if store.wakes_listeners else 0)
    assert store.wakes_listeners == (
        connections["default"].vendor == "postgresql" and type(store) is not storage.Storage
    )


def test_the_chosen_storage_is_the_fastest_for_the_database():
    chosen = storage.for_alias()
    assert chosen is storage.for_alias()  # chosen once
    assert type(chosen) is type(storage.implementations()[-1])
    assert isinstance(chosen, storage.Storage)
