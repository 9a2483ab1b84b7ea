"""Pruning never blocks workers: the real ``manage.py steady_queue`` drains jobs while its
dispatcher prunes 200,000 finished jobs, and PostgreSQL's ``pg_stat_activity`` never
shows a session waiting for more than 100 ms on a lock the pruning holds.

A pruning transaction names itself (``application_name``, pruning.SESSION_NAME), so a
sample tells whether a waiting session's blockers (``pg_blocking_pids``) include it.
Other lock waits are printed: on a loaded disk, sessions that NOTIFY queue behind each
other's commits (PostgreSQL serializes them), with or without pruning."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from steady_queue.backend import enqueue_all
from steady_queue.models import Job, PruneTally
from steady_queue.retention.pruning import SESSION_NAME
from tests import tasks

from .conftest import wait_until

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="pg_stat_activity is PostgreSQL's"
    ),
    # Over a minute (four on a 2-core machine loaded 15 times over):
    # run by make test-faults / test-slow-processes, not make test.
    pytest.mark.slow,
]

OLD_JOBS = 200_000
LOCK_WAIT_LIMIT = 0.1  # seconds
RULE = "succeeded jobs kept 1 day"


def insert_old_finished_jobs(count: int) -> None:
    """``count`` jobs that succeeded two days ago, in one statement (not run one by one)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO steady_queue_jobs (queue_name, task_path, backend, arguments, priority,
                attempts, concurrency_key, finished_at, created_at, updated_at)
            SELECT 'default', 'tests.tasks.noop', 'default', '{"args": [], "kwargs": {}}', 0,
                '[]', '', now() - interval '2 days', now() - interval '2 days',
                now() - interval '2 days'
            FROM generate_series(1, %s)
            """,
            [count],
        )
        cursor.execute("ANALYZE steady_queue_jobs")


class LockWaits(threading.Thread):
    """Sample pg_stat_activity every few milliseconds: the longest lock wait of each
    statement seen waiting (from its start: an upper bound of its wait), whether the
    pruning was among its blockers, and what it waited for."""

    def __init__(self):
        super().__init__(daemon=True)
        self.longest: dict[tuple[int, str], tuple[float, bool, str]] = {}
        self.samples = 0
        self._stop = threading.Event()

    def run(self) -> None:
        try:
            while not self._stop.is_set():
                self._sample()
                self.samples += 1
                self._stop.wait(0.01)
        finally:
            connection.close()

    def _sample(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                """
                SELECT w.pid, w.query_start::text,
                    EXTRACT(EPOCH FROM clock_timestamp() - w.query_start),
                    EXISTS (SELECT 1 FROM pg_stat_activity b
                        WHERE b.pid = ANY(pg_blocking_pids(w.pid))
                            AND b.application_name = %s),
                    w.application_name || ': ' || w.wait_event || ' for ' || w.query
                FROM pg_stat_activity w
                WHERE w.datname = current_database() AND w.wait_event_type = 'Lock'
                    AND w.pid <> pg_backend_pid()
                """,
                [SESSION_NAME],
            )
            for pid, started, waited, by_pruning, what in cursor.fetchall():
                longest, blamed, _ = self.longest.get((pid, started), (0.0, False, ""))
                self.longest[(pid, started)] = (
                    max(longest, float(waited)),
                    blamed or by_pruning,
                    what[:200],
                )

    def stop(self) -> None:
        self._stop.set()
        self.join(10)

    def worst(self, *, by_pruning: bool) -> tuple[float, bool, str]:
        waits = [wait for wait in self.longest.values() if wait[1] == by_pruning]
        return max(waits, default=(0.0, by_pruning, ""))


def test_workers_drain_while_the_dispatcher_prunes_200000_rows_without_lock_waits(
    start_supervisor,
):
    insert_old_finished_jobs(OLD_JOBS)
    waits = LockWaits()
    waits.start()
    enqueued: list[str] = []
    supervisor = start_supervisor("FAST", children=2)  # batches of 1,000, the default
    started = time.monotonic()

    # Jobs keep coming while the pass lasts: the workers drain them meanwhile.
    while not PruneTally.objects.filter(rule=RULE).exists():
        enqueued += [r.id for r in enqueue_all([(tasks.noop, (), {}) for _ in range(20)])]
        time.sleep(0.1)
        assert time.monotonic() - started < 300, "the pass did not end in 300 s"
        assert supervisor.popen.poll() is None, supervisor.output()
    pruned_in = time.monotonic() - started
    wait_until(
        lambda: (
            Job.objects.filter(pk__in=enqueued, finished_at__isnull=False).count() == len(enqueued)
        ),
        timeout=60,
        what="the jobs enqueued during the pass to be run",
    )
    waits.stop()
    print(f"pruned {OLD_JOBS} rows in {pruned_in:.1f}s, {len(enqueued)} jobs run meanwhile")

    assert PruneTally.objects.get(rule=RULE).removed == OLD_JOBS
    assert not Job.objects.filter(
        task_path="tests.tasks.noop", created_at__lt=_a_day_ago()
    ).exists()
    assert len(enqueued) > 100, f"the pass took {pruned_in:.1f}s: too short to drain during it"
    assert waits.samples > 100
    other = waits.worst(by_pruning=False)
    print(f"longest lock wait the pruning had no part in: {other[0] * 1000:.0f} ms ({other[2]})")
    worst = waits.worst(by_pruning=True)
    assert worst[0] < LOCK_WAIT_LIMIT, (
        f"a wait of {worst[0] * 1000:.0f} ms on the pruning: {worst[2]}"
    )


def _a_day_ago():
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() - timedelta(days=1)
