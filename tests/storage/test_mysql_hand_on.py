"""MySQL/MariaDB's hand-on script (storage/mysql_hand_on.py): how it runs, not what it does.

test_slot_hand_on.py checks what a limited job's finish does on every storage; these
check that the fast storage does it in one script whichever way the slot goes, and only
outside a caller's transaction.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.models import BlockedExecution, Job, Pause, ReadyExecution, Semaphore
from steady_queue.models.claimed_finish import Success
from tests.storage.test_slot_hand_on import state_of, two_exclusive

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL/MariaDB's fast storage"),
]


def test_a_slot_given_back_is_one_script_too(fast, process):
    first, second = two_exclusive(fast)
    (claimed,) = fast.claim(["*"], 1, process)
    Pause.objects.create(queue_name="default")

    with CaptureQueriesContext(connection) as queries:
        finished = fast.finish(
            claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
        )

    # The finish with the slot given back and the next job admitted; then the claim,
    # which finds the queue paused (one script, then the selector's DISTINCT).
    assert queries[0]["sql"].startswith("START TRANSACTION")
    assert len([q for q in queries if q["sql"].startswith("START TRANSACTION")]) == 2
    assert finished.recorded and finished.claimed == []
    assert ReadyExecution.objects.get().job_id == second.pk
    assert Semaphore.objects.get(key=first.concurrency_key).value == 0


def test_inside_a_callers_transaction_the_portable_hand_on_runs(fast, process):
    _first, second = two_exclusive(fast)
    (claimed,) = fast.claim(["*"], 1, process)

    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        finished = fast.finish(
            claimed, Success([0.0, 0.0]), then_claim=storage.ClaimNext(["*"], process)
        )

    assert not [q for q in queries if q["sql"].startswith("START TRANSACTION")]
    assert [c.job_id for c in finished.claimed] == [second.pk]
    assert not BlockedExecution.objects.exists()
    assert Job.objects.filter(finished_at__isnull=False).count() == 1
    assert state_of(second) == "running"
