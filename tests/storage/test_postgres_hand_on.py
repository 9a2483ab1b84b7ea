"""PostgreSQL's hand-on statement (storage/postgres_hand_on.py): how it runs, not what it does.

test_slot_hand_on.py checks what a limited job's finish does on every storage; these
check that the fast storage does it in one statement in autocommit whichever way the
slot goes, announces a job it admits to ready, and keeps the key's count right when its
holders give their slots back at the same moment.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.models import BlockedExecution, ClaimedExecution, Pause, ReadyExecution, Semaphore
from steady_queue.models.claimed_finish import Success
from steady_queue.storage import notify
from tests.at_once import at_once
from tests.storage.test_slot_hand_on import enqueued, two_exclusive
from tests.tasks import features as limited_tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's fast storage"),
]


def test_a_slot_given_back_is_one_statement_in_autocommit(fast, process):
    first, second = two_exclusive(fast)
    (claimed,) = fast.claim(["*"], 1, process)
    Pause.objects.create(queue_name="default")

    with CaptureQueriesContext(connection) as queries:
        finished = fast.finish(
            claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
        )

    # The finish with the slot given back and the next job admitted, then the claim
    # from ready (which finds the queue paused).
    assert "WITH claim AS" in queries[0]["sql"]
    assert not [q for q in queries if q["sql"].upper().startswith(("SAVEPOINT", "BEGIN"))]
    assert finished.recorded and finished.claimed == []
    assert ReadyExecution.objects.get().job_id == second.pk
    assert Semaphore.objects.get(key=first.concurrency_key).value == 0


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


def test_holders_giving_their_slots_back_at_once_admit_one_job_each(fast, process):
    task = limited_tasks.paired  # to=2
    jobs = enqueued(fast, *[(task, n) for n in range(6)])
    holders = fast.claim(["*"], 2, process)
    assert sorted(c.job_id for c in holders) == [jobs[0].pk, jobs[1].pk]
    Pause.objects.create(queue_name="default")  # no hand-on: each slot goes back

    def finish(claimed: ClaimedExecution) -> None:
        then = storage.ClaimNext(["*"], process)
        assert fast.finish(claimed, Success([0.0, 0.0]), then_claim=then).recorded

    failures = at_once(finish, holders)

    assert not failures, failures
    ready = sorted(ReadyExecution.objects.values_list("job_id", flat=True))
    assert ready == [jobs[2].pk, jobs[3].pk]
    assert BlockedExecution.objects.count() == 2
    assert Semaphore.objects.get(key=jobs[0].concurrency_key).value == 0
