"""PostgreSQL's claims start after the last claimed key (storage/postgres/claim_cursor.py).

While a transaction older than the claims is open, every claimed job's entry stays at
the head of the poll index, alive to PostgreSQL; a claim from the head steps over all
of them, a claim after the last claimed key does not. A job that becomes ready before
that key is claimed within ``claim_rescan_interval``; a higher priority at once.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

import steady_queue
from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.models import ReadyExecution, ScheduledExecution
from steady_queue.storage.postgres.claim_cursor import CURSORS
from tests import tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's claim path"),
]

READY = 3_000
CLAIMED = 2_000  # dead entries at the head of the poll index once claimed


@pytest.fixture
def held_horizon():
    """Another connection in a REPEATABLE READ transaction that took its snapshot."""
    settings = connection.settings_dict
    holder = psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"], port=settings["PORT"]
    )
    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT count(*) FROM steady_queue_jobs")
    yield
    holder.rollback()
    holder.close()


@pytest.mark.parametrize("interval", [timedelta(hours=1), None], ids=["cursor", "from head"])
def test_a_claim_under_a_held_horizon_reads_past_the_claimed_entries(
    held_horizon, monkeypatch, interval
):
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", interval)
    enqueue_all([(tasks.noop, (), {})] * READY)
    for _ in range(CLAIMED // 100):
        assert len(storage.claim(["*"], 100, None)) == 100

    buffers = claim_buffers(lambda: storage.claim(["*"], 10, None))

    if interval is None:  # the claim from the head: a heap visit per claimed job's entry
        assert buffers > CLAIMED / 2
    else:
        assert buffers < 100


def test_a_job_of_higher_priority_is_claimed_at_once(monkeypatch):
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", timedelta(hours=1))
    enqueue_all([(tasks.noop, (), {})] * 20)
    first = storage.claim(["*"], 1, None)

    (urgent,) = enqueue_all([(tasks.noop.using(priority=5), (), {})])

    assert [c.job_id for c in storage.claim(["*"], 1, None)] == [int(urgent.id)]
    assert storage.claim(["*"], 1, None)[0].job_id == first[0].job_id + 1  # FIFO resumes


def test_a_job_ready_before_the_cursor_is_claimed_within_the_interval(monkeypatch):
    interval = timedelta(milliseconds=300)
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", interval)
    later = timezone.now() + timedelta(hours=1)
    (early,) = enqueue_all([(tasks.noop.using(run_after=later), (), {})])
    enqueue_all([(tasks.noop, (), {})] * 500)
    claimed = [c.job_id for c in storage.claim(["*"], 1, None)]  # the cursor: past `early`

    # Made ready now (a scheduled job dispatched; a retry likewise): before the cursor.
    ScheduledExecution.objects.update(scheduled_at=timezone.now())
    assert ScheduledExecution.dispatch_next_batch(10) == 1
    dispatched_at = time.monotonic()
    deadline = dispatched_at + interval.total_seconds() + 5  # the bound, and a loaded machine
    while int(early.id) not in claimed and time.monotonic() < deadline:
        claimed += [c.job_id for c in storage.claim(["*"], 1, None)]
    waited = time.monotonic() - dispatched_at

    assert int(early.id) in claimed, f"not claimed within {waited:.1f} s"
    others = [job_id for job_id in claimed if job_id != int(early.id)]
    assert others == sorted(others)  # the jobs after the cursor, in their order meanwhile
    assert ReadyExecution.objects.count() == 501 - len(claimed)


def test_the_cursor_is_kept_per_queue_and_forgotten_when_nothing_is_claimed():
    enqueue_all([(tasks.noop.using(queue_name="a"), (), {})] * 3)
    (one,) = storage.claim(["a"], 1, None)
    assert CURSORS.start("a")[2] in (one.job_id, None)  # None: a claim from the head was due
    assert CURSORS.start("b") == [None, None, None]

    storage.claim(["a"], 5, None)
    storage.claim(["a"], 5, None)  # nothing left

    assert CURSORS.start("a") == [None, None, None]


def claim_buffers(claim) -> int:
    """The shared buffers ``claim``'s statement reads, from EXPLAIN (ANALYZE, BUFFERS):
    run for real inside a transaction rolled back."""
    statements = []

    def record(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with transaction.atomic():
        with connection.execute_wrapper(record):
            claim()
        transaction.set_rollback(True)
    ((sql, params),) = statements
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()[0]
        transaction.set_rollback(True)
    plan = plan if isinstance(plan, dict) else json.loads(plan)
    top = plan["Plan"]
    return top["Shared Hit Blocks"] + top["Shared Read Blocks"]
