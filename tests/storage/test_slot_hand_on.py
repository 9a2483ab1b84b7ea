"""A finishing worker thread takes the job its concurrency slot passes to (slot_hand_on).

The contract of the slot's hand-on, run on every storage of the database under test
(SQ_TEST_DB): the portable finish's hand-on (models.execution.slot_hand_on), and the fast
storages' own ``write_hand_on`` (PostgreSQL's one statement, MySQL/MariaDB's one script,
SQLite's one transaction) pass the same tests, racing threads included. What each
storage sends for it is the last section's.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from steady_queue import db, storage
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    Job,
    Pause,
    ReadyExecution,
    Semaphore,
)
from steady_queue.models.execution.claimed_finish import Failure, Success
from steady_queue.storage import notify
from steady_queue.task_options.concurrency import limit_for
from tests import tasks
from tests.at_once import at_once
from tests.storage.statements import sent
from tests.tasks import features as limited_tasks

pytestmark = pytest.mark.django_db(transaction=True)


def enqueued(store, *calls) -> list[Job]:
    return store.enqueue(
        [Job.for_task_call(task, args, {}, backend="default") for task, *args in calls]
    )


def state_of(job: Job) -> str:
    return Job.objects.with_execution().get(pk=job.pk).state


def two_exclusive(store, queue_name: str = "default") -> tuple[Job, Job]:
    task = limited_tasks.exclusive.using(queue_name=queue_name)
    return tuple(enqueued(store, (task, 1), (task, 2)))


def slots_free(job: Job) -> int:
    return Semaphore.objects.get(key=job.concurrency_key).value


def test_the_finishing_thread_claims_the_job_its_slot_passes_to(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    asked = []

    def allowed():
        asked.append(True)
        return True

    then = storage.ClaimNext(["*"], process, allowed=allowed)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert finished.recorded and not finished.claim_failed
    assert [c.job_id for c in finished.claimed] == [second.pk]
    assert finished.claimed[0].job.pk == second.pk  # loaded: the thread runs it at once
    assert asked == [True]
    assert ClaimedExecution.objects.get().process_id == process.pk
    assert not BlockedExecution.objects.exists() and not ReadyExecution.objects.exists()
    assert slots_free(first) == 0  # the slot stayed taken: now the second job's
    assert Job.objects.get(pk=first.pk).finished_at is not None


def test_the_handed_job_ends_and_gives_the_slot_back(store, process):
    first, _second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    then = storage.ClaimNext(["*"], process)
    (following,) = store.finish(claimed, Success([0.0, 0.0]), then_claim=then).claimed

    finished = store.finish(following, Success([0.0, 0.0]), then_claim=then)

    assert finished.recorded and finished.claimed == []
    assert Job.objects.filter(finished_at__isnull=True).count() == 0
    assert slots_free(first) == 1


def test_a_failure_hands_its_slot_on_too(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)

    then = storage.ClaimNext(["*"], process)
    finished = store.finish(claimed, Failure(ValueError("no")), then_claim=then)

    assert state_of(first) == "failed"
    assert [c.job_id for c in finished.claimed] == [second.pk]


def test_a_thread_that_may_not_claim_leaves_the_job_ready(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    asked = []

    then = storage.ClaimNext(["*"], process, allowed=lambda: asked.append(True) or False)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert finished.recorded and finished.claimed is None
    assert asked == [True]  # asked once, not again for a claim from ready
    assert state_of(second) == "ready" and slots_free(first) == 0


def test_a_job_of_a_queue_the_worker_does_not_poll_goes_to_ready(store, process):
    _first, second = two_exclusive(store, queue_name="background")
    (claimed,) = store.claim(["background"], 1, process)

    then = storage.ClaimNext(["beta*", "default"], process)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert finished.claimed == []
    assert state_of(second) == "ready"


def test_a_queue_named_like_the_start_of_the_jobs_queue_is_another_queue(store, process):
    _first, second = two_exclusive(store, queue_name="beta_one")
    (claimed,) = store.claim(["*"], 1, process)

    then = storage.ClaimNext(["beta", "beta_"], process)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert finished.claimed == []
    assert state_of(second) == "ready"


def test_a_wildcard_the_job_matches_takes_it(store, process):
    _first, second = two_exclusive(store, queue_name="beta_two")
    (claimed,) = store.claim(["*"], 1, process)

    then = storage.ClaimNext(["low", "beta*"], process)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert [c.job_id for c in finished.claimed] == [second.pk]


def test_a_paused_queue_keeps_the_job_ready(store, process):
    _first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    Pause.objects.create(queue_name="default")

    finished = store.finish(
        claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
    )

    assert finished.claimed == []
    assert state_of(second) == "ready"


def test_a_key_over_its_limit_gives_the_slot_back_instead(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    # An operator released a third job by hand: the key counts two holders for one slot.
    Semaphore.take_over_limit(first.concurrency_key, limit_for(first.task_path))
    assert slots_free(first) == -1

    finished = store.finish(
        claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
    )

    assert finished.claimed == []
    assert state_of(second) == "blocked" and slots_free(first) == 0


def test_a_lost_claim_hands_nothing_on(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    ClaimedExecution.objects.filter(job_id=first.pk).delete()  # failed by a supervisor

    finished = store.finish(
        claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
    )

    assert not finished.recorded
    assert state_of(second) == "blocked"


def test_a_ready_job_of_higher_priority_is_claimed_first(store, process):
    # With one thread, handing on regardless would starve it until the key ran dry.
    _first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    (urgent,) = enqueued(store, (tasks.add.using(priority=5), 1, 1))

    finished = store.finish(
        claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
    )

    assert [c.job_id for c in finished.claimed] == [urgent.pk]
    assert state_of(second) == "ready"


def test_a_ready_job_of_an_earlier_queue_is_claimed_first(store, process):
    _first, second = two_exclusive(store)
    (claimed,) = store.claim(["default"], 1, process)
    (earlier,) = enqueued(store, (tasks.add.using(queue_name="background", priority=-5), 1, 1))

    then = storage.ClaimNext(["background", "default"], process)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert [c.job_id for c in finished.claimed] == [earlier.pk]
    assert state_of(second) == "ready"


def test_a_ready_job_of_a_queue_not_polled_does_not_stop_the_hand_on(store, process):
    _first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    enqueued(store, (tasks.add.using(queue_name="background", priority=5), 1, 1))

    then = storage.ClaimNext(["default", "beta*"], process)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert [c.job_id for c in finished.claimed] == [second.pk]


def test_a_ready_job_of_a_wildcards_queue_is_claimed_first(store, process):
    _first, second = two_exclusive(store)
    (claimed,) = store.claim(["default"], 1, process)
    (earlier,) = enqueued(store, (tasks.add.using(queue_name="beta_two"), 1, 1))

    then = storage.ClaimNext(["beta*", "default"], process)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert [c.job_id for c in finished.claimed] == [earlier.pk]
    assert state_of(second) == "ready"


def test_ready_jobs_of_queues_around_a_wildcards_prefix_do_not_stop_the_hand_on(store, process):
    _first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    # Just before and after "beta" in the queue names' order, none starting with it.
    jobs = [Job.for_task_call(tasks.add, (1, 1), {}, backend="default") for _ in range(3)]
    for job, queue_name in zip(jobs, ["bet", "betz", "Beta_upper"], strict=True):
        job.queue_name = queue_name  # names the backend's settings do not list
    store.enqueue(jobs)

    then = storage.ClaimNext(["default", "beta*"], process)
    finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert [c.job_id for c in finished.claimed] == [second.pk]


def test_an_expired_semaphore_gives_the_job_to_ready_instead(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    Semaphore.objects.filter(key=first.concurrency_key).delete()  # expired, pruned

    finished = store.finish(
        claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
    )

    assert finished.recorded
    assert [c.job_id for c in finished.claimed] == [second.pk]  # claimed from ready
    assert slots_free(first) == 0  # taken again by the second job on its way to ready


def test_the_highest_priority_blocked_job_is_the_one_handed_on(store, process):
    low = limited_tasks.exclusive.using(priority=1)
    high = limited_tasks.exclusive.using(priority=5)
    _first, _, urgent = enqueued(store, (low, 1), (low, 2), (high, 3))
    (claimed,) = store.claim(["*"], 1, process)

    finished = store.finish(
        claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
    )

    assert [c.job_id for c in finished.claimed] == [urgent.pk]


def test_handing_on_costs_fewer_statements_than_a_release_and_a_claim(store, process):
    def cost(then_claim) -> int:
        ReadyExecution.objects.all().delete()
        _first, second = two_exclusive(store)
        (claimed,) = store.claim(["*"], 1, process)
        with CaptureQueriesContext(db.connection()) as queries:
            finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then_claim)
            if then_claim is None:
                claimed_next = store.claim(["*"], 1, process)
            else:
                claimed_next = finished.claimed
        assert [c.job_id for c in claimed_next] == [second.pk]
        store.finish(claimed_next[0], Success([0.0, 0.0]))
        return len(queries)

    released = cost(None)  # the slot goes back, the job to ready, then a claim
    handed = cost(storage.ClaimNext(["*"], process))
    assert handed <= released - 4, (handed, released)
    if type(store).__name__ == "PostgresStorage":
        assert handed == 1  # one statement, in autocommit (storage/postgres_hand_on.py)
    if type(store).__name__ == "MysqlStorage":
        assert handed == 1  # one script (storage/mysql_hand_on.py)
    if type(store).__name__ == "SqliteStorage":
        # BEGIN IMMEDIATE, delete the claim, mark the job finished, take the blocked job,
        # renew the semaphore, claim the job, COMMIT (storage/sqlite_hand_on.py).
        assert handed == 7, (handed, released)


def test_an_unlimited_job_claims_its_next_job_the_usual_way(store, process):
    _first, second = enqueued(store, (tasks.add, 1, 1), (tasks.add, 2, 2))
    (claimed,) = store.claim(["*"], 1, process)

    finished = store.finish(claimed, Success(2), then_claim=storage.ClaimNext(["*"], process))

    assert [c.job_id for c in finished.claimed] == [second.pk]


def test_a_key_whose_semaphore_expired_admits_the_next_job_with_a_new_one(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    Semaphore.objects.filter(key=first.concurrency_key).delete()  # expired, then deleted
    Pause.objects.create(queue_name="default")  # no hand-on: the slot goes back

    finished = store.finish(
        claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
    )

    assert finished.recorded and finished.claimed == []
    assert state_of(second) == "ready" and slots_free(first) == 0


def test_threads_finishing_the_same_claim_record_it_and_hand_its_slot_on_once(store, process):
    first, _second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    finished = []
    # Each thread its own copy of the claim, loaded before they race.
    mine = ClaimedExecution.objects.select_related("job", "process")
    copies = [mine.get(job_id=first.pk) for _ in range(3)]

    def finish(copy: ClaimedExecution) -> None:
        then = storage.ClaimNext(["*"], process)
        finished.append(store.finish(copy, Success([0.0, 0.0]), then_claim=then))

    assert at_once(finish, copies) == []
    assert sorted(f.recorded for f in finished) == [False, False, True]
    handed = [c.job_id for f in finished for c in f.claimed or []]
    assert len(handed) == 1  # the slot's one job, claimed once
    assert list(ClaimedExecution.objects.values_list("job_id", flat=True)) == handed
    assert not BlockedExecution.objects.exists()
    assert slots_free(first) == 0
    assert len(Job.objects.get(pk=claimed.job_id).attempts) == 1


def test_holders_giving_their_slots_back_at_once_admit_one_job_each(store, process):
    task = limited_tasks.paired  # to=2
    jobs = enqueued(store, *[(task, n) for n in range(6)])
    holders = store.claim(["*"], 2, process)
    assert sorted(c.job_id for c in holders) == [jobs[0].pk, jobs[1].pk]
    Pause.objects.create(queue_name="default")  # no hand-on: each slot goes back

    def finish(claimed: ClaimedExecution) -> None:
        then = storage.ClaimNext(["*"], process)
        assert store.finish(claimed, Success([0.0, 0.0]), then_claim=then).recorded

    assert at_once(finish, holders) == []
    ready = sorted(ReadyExecution.objects.values_list("job_id", flat=True))
    assert ready == [jobs[2].pk, jobs[3].pk]
    assert BlockedExecution.objects.count() == 2
    assert slots_free(jobs[0]) == 0


def test_inside_a_callers_transaction_the_slot_is_handed_on_too(store, process):
    _first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)

    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        then = storage.ClaimNext(["*"], process)
        finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert [c.job_id for c in finished.claimed] == [second.pk]
    assert not BlockedExecution.objects.exists()
    assert Job.objects.filter(finished_at__isnull=False).count() == 1
    assert state_of(second) == "running"
    if type(store).__name__ == "MysqlStorage":
        # A script cannot run inside a transaction: the portable hand-on ran.
        assert not [q for q in queries if q["sql"].startswith("START TRANSACTION")]


# What each storage sends: its hand-on (``Storage.write_hand_on``) in one write, whichever
# way the slot goes.

#: The statements of a hand-on, by storage (the portable one: the ORM's, see the cost test).
HAND_ON_SENT = {
    "PostgresStorage": ["WITH claim AS"],  # one statement, in autocommit
    "MysqlStorage": ["START TRANSACTION;"],  # one script
    "SqliteStorage": [
        "BEGIN IMMEDIATE",
        'DELETE FROM "steady_queue_claimed_executions"',
        'UPDATE "steady_queue_jobs" SET',
        'DELETE FROM "steady_queue_blocked_executions"',
        'UPDATE "steady_queue_semaphores" SET',
        'INSERT INTO "steady_queue_claimed_executions"',
        "COMMIT",
    ],
}


def _statement(query: dict) -> str:
    # PostgreSQL's prepared cursor (storage/postgres/cursor.py) logs QUERY = '...'.
    return query["sql"].removeprefix("QUERY = '")


def test_a_hand_on_is_one_write_of_the_storage(store, process):
    enqueued(store, *[(limited_tasks.exclusive, i) for i in range(3)])
    (claimed,) = store.claim(["default", "beta*"], 1, process)
    then = storage.ClaimNext(["default", "beta*"], process)

    with CaptureQueriesContext(connection) as queries:
        finished = store.finish(claimed, Success([0.0, 0.0]), then_claim=then)

    (following,) = finished.claimed
    assert following.job.arguments["args"] == [1]  # the job's row, loaded as the ORM would
    assert ClaimedExecution.objects.get().job_id == following.job_id
    assert BlockedExecution.objects.count() == 1
    expected = HAND_ON_SENT.get(type(store).__name__)
    if expected is not None:
        assert len(queries) == len(expected), sent(queries)
        for query, start in zip(queries, expected, strict=True):
            assert _statement(query).startswith(start), query["sql"][:80]


def test_a_slot_given_back_is_one_write_of_the_storage_too(store, process):
    first, second = two_exclusive(store)
    (claimed,) = store.claim(["*"], 1, process)
    Pause.objects.create(queue_name="default")

    with CaptureQueriesContext(connection) as queries:
        finished = store.finish(
            claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
        )

    # The finish with the slot given back and the next job admitted, then the claim from
    # ready (which finds the queue paused).
    assert finished.recorded and finished.claimed == []
    assert ReadyExecution.objects.get().job_id == second.pk
    assert slots_free(first) == 0
    if type(store).__name__ == "PostgresStorage":
        assert _statement(queries[0]).startswith("WITH claim AS")
        assert not [q for q in queries if q["sql"].upper().startswith(("SAVEPOINT", "BEGIN"))]
    if type(store).__name__ == "MysqlStorage":
        assert queries[0]["sql"].startswith("START TRANSACTION")
        assert len([q for q in queries if q["sql"].startswith("START TRANSACTION")]) == 2
    if type(store).__name__ == "SqliteStorage":
        assert sent(queries)[0] == "BEGIN IMMEDIATE"
        assert sent(queries).count("BEGIN IMMEDIATE") == 2  # the finish's, then the claim's


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_a_job_admitted_to_ready_is_announced(fast, process):
    import psycopg

    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        dbname=settings["NAME"],
        autocommit=True,
    ) as listening:
        listening.execute(f"LISTEN {notify.READY_CHANNEL}")
        _first, second = two_exclusive(fast, queue_name="background")
        (claimed,) = fast.claim(["background"], 1, process)
        drained = list(listening.notifies(timeout=0.5))  # the enqueue's own, if any

        then = storage.ClaimNext(["default"], process)  # not the job's queue: no hand-on
        finished = fast.finish(claimed, Success([0.0, 0.0]), then_claim=then)

        assert finished.recorded and finished.claimed == []
        assert ReadyExecution.objects.get().job_id == second.pk
        heard = next(listening.notifies(timeout=10, stop_after=1), None)
    assert heard is not None, drained
    assert (heard.channel, heard.payload) == (notify.READY_CHANNEL, "background")
