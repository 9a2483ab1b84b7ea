"""PostgreSQL's claims start after the last claimed key (storage/postgres/claim_cursor.py).

While a transaction older than the claims is open, every claimed job's entry stays at
the head of the poll index, alive to PostgreSQL; a claim from the head steps over all
of them, a claim after the last claimed key does not. A job that becomes ready before
that key is claimed within ``claim_rescan_interval``; a higher priority at once.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

import steady_queue
from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.models import Process, ReadyExecution, ScheduledExecution
from steady_queue.models.execution.claimed_finish import Success
from steady_queue.storage.postgres.claim_cursor import (
    CURSORS,
    FROM_HEAD,
    HEAD_SPACING_CAP,
    ClaimCursors,
)
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


@pytest.fixture
def worker() -> Process:
    """The claiming process: only a worker process's claims keep a cursor."""
    return Process.register(kind=Process.Kind.WORKER, name="cursor", pid=os.getpid())


def test_a_claim_without_a_process_takes_from_the_head_in_the_strict_order(monkeypatch):
    # steady_queue.testing's runs and scripts: a job made ready behind the others is next.
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", timedelta(hours=1))
    later = timezone.now() + timedelta(hours=1)
    (early,) = enqueue_all([(tasks.noop.using(run_after=later), (), {})])
    enqueue_all([(tasks.noop, (), {})] * 5)
    storage.claim(["*"], 1, None)

    ScheduledExecution.objects.update(scheduled_at=timezone.now())
    assert ScheduledExecution.dispatch_next_batch(10) == 1

    assert [c.job_id for c in storage.claim(["*"], 1, None)] == [int(early.id)]
    assert CURSORS.start(("default", None)) == [None, None, None]  # none kept


@pytest.mark.parametrize("interval", [timedelta(hours=1), None], ids=["cursor", "from head"])
def test_a_claim_under_a_held_horizon_reads_past_the_claimed_entries(
    held_horizon, monkeypatch, interval, worker
):
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", interval)
    enqueue_all([(tasks.noop, (), {})] * READY)
    for _ in range(CLAIMED // 100):
        assert len(storage.claim(["*"], 100, worker)) == 100

    entries = index_entries_read(lambda: storage.claim(["*"], 10, worker))

    if interval is None:  # the claim from the head steps over every claimed job's entry
        assert entries > CLAIMED
    else:
        assert entries < 100


def test_a_finish_and_its_next_claim_under_a_held_horizon_read_past_them(held_horizon, monkeypatch):
    # The workers' threads claim their next job with their finish: the hot path.
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", timedelta(hours=1))
    process = Process.register(kind=Process.Kind.WORKER, name="cursor", pid=os.getpid())
    enqueue_all([(tasks.noop, (), {})] * READY)
    for _ in range(CLAIMED // 100):
        storage.claim(["*"], 100, process)
    (claimed,) = storage.claim(["*"], 1, process)
    then = storage.ClaimNext(["*"], process)

    entries = index_entries_read(
        lambda: storage.for_alias().finish(claimed, Success([0.0, 0.0]), then_claim=then)
    )

    assert entries < 100


def test_a_job_of_higher_priority_is_claimed_at_once(monkeypatch, worker):
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", timedelta(hours=1))
    enqueue_all([(tasks.noop, (), {})] * 20)
    first = storage.claim(["*"], 1, worker)

    (urgent,) = enqueue_all([(tasks.noop.using(priority=5), (), {})])

    assert [c.job_id for c in storage.claim(["*"], 1, worker)] == [int(urgent.id)]
    assert storage.claim(["*"], 1, worker)[0].job_id == first[0].job_id + 1  # FIFO resumes


def test_a_job_ready_before_the_cursor_is_claimed_within_the_interval(monkeypatch, worker):
    interval = timedelta(milliseconds=300)
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", interval)
    later = timezone.now() + timedelta(hours=1)
    (early,) = enqueue_all([(tasks.noop.using(run_after=later), (), {})])
    enqueue_all([(tasks.noop, (), {})] * 500)
    claimed = [c.job_id for c in storage.claim(["*"], 1, worker)]  # the cursor: past `early`

    # Made ready now (a scheduled job dispatched; a retry likewise): before the cursor.
    ScheduledExecution.objects.update(scheduled_at=timezone.now())
    assert ScheduledExecution.dispatch_next_batch(10) == 1
    dispatched_at = time.monotonic()
    deadline = dispatched_at + interval.total_seconds() + 5  # the bound, and a loaded machine
    while int(early.id) not in claimed and time.monotonic() < deadline:
        claimed += [c.job_id for c in storage.claim(["*"], 1, worker)]
    waited = time.monotonic() - dispatched_at

    assert int(early.id) in claimed, f"not claimed within {waited:.1f} s"
    others = [job_id for job_id in claimed if job_id != int(early.id)]
    assert others == sorted(others)  # the jobs after the cursor, in their order meanwhile
    assert ReadyExecution.objects.count() == 501 - len(claimed)


def test_the_cursor_is_kept_per_queue_and_forgotten_when_nothing_is_claimed(worker):
    enqueue_all([(tasks.noop.using(queue_name="other"), (), {})] * 3)
    (one,) = storage.claim(["other"], 1, worker)
    assert CURSORS.start(("default", "other"))[2] in (
        one.job_id,
        None,
    )  # None: a claim from the head was due
    assert CURSORS.start(("default", "low")) == [None, None, None]

    storage.claim(["other"], 5, worker)
    storage.claim(["other"], 5, worker)  # nothing left

    assert CURSORS.start(("default", "other")) == [None, None, None]


def index_entries_read(claim) -> int:
    """The poll index's entries, live or not, that ``claim`` read: the counts of the
    backend's own unflushed statistics before and after (one transaction: no flush
    between), the claim rolled back after."""
    sql = "SELECT pg_stat_get_xact_tuples_returned('sq_poll_all'::regclass)"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql)
        (before,) = cursor.fetchone()
        claim()
        cursor.execute(sql)
        (after,) = cursor.fetchone()
        transaction.set_rollback(True)
    return after - before


def test_claims_from_the_head_are_spaced_by_what_they_take(monkeypatch):
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", timedelta(seconds=1))
    now = [100.0]  # seconds in quarters: exact in binary
    cursors = ClaimCursors(clock=lambda: now[0])
    key = (0, 0.0, 7)

    def after(seconds: float) -> list:
        now[0] += seconds
        return cursors.start("q")

    assert after(0) == FROM_HEAD  # no key yet
    cursors.advance("q", [key])  # it took no time
    assert after(0.5) == list(key)
    assert after(0.5) == FROM_HEAD  # the interval: from the head again...
    now[0] += 0.25  # ... which took 0.25 s (a horizon held long): 20 times that apart
    cursors.advance("q", [key])
    assert after(4.5) == list(key)
    assert after(0.25) == FROM_HEAD  # 5 s after the last one started
    now[0] += 2  # a claim from the head stalled 2 s: not 40 s apart, HEAD_SPACING_CAP
    cursors.advance("q", [key])
    assert after(HEAD_SPACING_CAP - 2 - 0.25) == list(key)
    assert after(0.25) == FROM_HEAD


def test_a_fair_share_tag_is_never_a_cursor(monkeypatch):
    # A key that arrives is tagged from the smallest tag still ready, which may lie before
    # the last claimed tag: fair jobs are claimed from the head.
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", timedelta(hours=1))
    cursors = ClaimCursors()
    assert cursors.start("q") == FROM_HEAD
    cursors.advance("q", [(0, 0.0, 7)])
    assert cursors.start("q") == [0, 0.0, 7]

    cursors.advance("q", [(0, 0.0, 8), (0, 2.999, 9)])

    assert cursors.start("q") == FROM_HEAD
