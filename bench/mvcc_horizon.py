"""Does draining slow down while a long transaction holds back cleanup? (PostgreSQL)

    python bench/mvcc_horizon.py                    # hold a transaction 10 minutes
    python bench/mvcc_horizon.py --hold 180 --before 60 --after 60

``manage.py steady_queue`` (2 processes of 2 threads) drains no-op jobs at full speed,
the queue kept full by bulk enqueues of 2,000. After ``--before`` seconds, a second
connection opens a ``REPEATABLE READ`` transaction, takes its snapshot and sits idle in
it for ``--hold`` seconds (the report, psql session or stuck request that holds back
VACUUM), then ends it; ``--after`` seconds more are measured. Every ``--every``
seconds it prints the jobs finished per second in that window and the dead tuples of
the tables a claim reads and writes (``pg_stat_user_tables.n_dead_tup``), and the
entries of the ready table's poll indexes that scans read per job finished
(``pg_stat_user_indexes.idx_tup_read``, dead ones included: what a claim steps over;
the statistics reach the view within a second or so, so a window's figure is close, not
exact), then the throughput of each phase and the held phase's last minute against the
one before.

The database (``--name``, default sq_history_mvcc) is dropped and created afresh, and
dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FEED = 2_000  # jobs per bulk enqueue
LOW_WATER = 4_000  # ready jobs under which another batch is enqueued
TABLES = [
    "steady_queue_jobs",
    "steady_queue_ready_executions",
    "steady_queue_claimed_executions",
]


def main() -> int:
    options = _parse_args()
    from bench import database

    with database.scratch_postgres(options.name, settings="bench.observability_settings"):
        return _run(options)


def _run(options: argparse.Namespace) -> int:
    from bench import processes, system

    print(f"{os.cpu_count()} cores, {system._database()}")
    tables = " ".join(f"{t[13:]:>20}" for t in TABLES)
    print(f"{'second':>6} {'phase':<8} {'jobs/s':>8} {tables} {'entries/job':>12}")
    _feed()
    _close_connections()
    rates: dict[str, list[tuple[float, float]]] = {"before": [], "held": [], "after": []}
    entries: dict[str, list[tuple[float, float]]] = {"before": [], "held": [], "after": []}
    with processes.running(processes.steady_queue("2x2")):
        started = time.monotonic()
        holder = None
        phases = [
            ("before", options.before),
            ("held", options.before + options.hold),
            ("after", options.before + options.hold + options.after),
        ]
        window = _Window()
        for phase, until in phases:
            if phase == "held":
                holder = _hold()
            if phase == "after" and holder is not None:
                holder.rollback()
                holder.close()
            while (now := time.monotonic() - started) < until:
                _feed()
                if window.due(options.every):
                    rate, per_job = window.rate()
                    rates[phase].append((now, rate))
                    entries[phase].append((now, per_job))
                    dead = _dead_tuples()
                    print(
                        f"{now:>6.0f} {phase:<8} {rate:>8.1f} "
                        + " ".join(f"{dead.get(t, 0):>20,}" for t in TABLES)
                        + f" {per_job:>12,.1f}",
                        flush=True,
                    )
                time.sleep(0.2)
    print()
    for phase, samples in rates.items():
        values = [rate for _, rate in samples[1:]] or [rate for _, rate in samples]
        if values:
            print(f"{phase:<7} median {statistics.median(values):8.1f} jobs/s")
    before = [rate for _, rate in rates["before"][1:]] or [r for _, r in rates["before"]]
    last_minute = [rate for at, rate in rates["held"] if at >= options.before + options.hold - 60]
    if before and last_minute:
        ratio = statistics.median(last_minute) / statistics.median(before)
        print(f"held, last minute / before: {ratio:.2f}")
    read = [e for at, e in entries["held"] if at >= options.before + options.hold - 60]
    if read:
        before_read = statistics.median(e for _, e in entries["before"][1:] or entries["before"])
        print(
            f"poll index entries read per job: before {before_read:,.1f}, "
            f"held last minute {statistics.median(read):,.1f}"
        )
    return 0


class _Window:
    """Jobs finished since the last look, per second, and poll index entries read per job."""

    def __init__(self) -> None:
        self.at, self.count, self.entries = time.monotonic(), _finished(), _entries_read()

    def due(self, every: float) -> bool:
        return time.monotonic() - self.at >= every

    def rate(self) -> tuple[float, float]:
        at, count, entries = time.monotonic(), _finished(), _entries_read()
        rate = (count - self.count) / (at - self.at)
        per_job = (entries - self.entries) / max(count - self.count, 1)
        self.at, self.count, self.entries = at, count, entries
        return rate, per_job


def _finished() -> int:
    """Jobs finished so far: those enqueued (the largest id) less those still ready or
    claimed (two small tables), so a sample costs the same however long the history."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM steady_queue_jobs)"
            " - (SELECT count(*) FROM steady_queue_ready_executions)"
            " - (SELECT count(*) FROM steady_queue_claimed_executions)"
        )
        return cursor.fetchone()[0]


def _feed() -> None:
    from bench.scale_tasks import noop
    from steady_queue.backend import enqueue_all
    from steady_queue.models import ReadyExecution

    if ReadyExecution.objects.count() < LOW_WATER:
        enqueue_all([(noop, (), {})] * FEED)


def _hold():
    """A second connection in a REPEATABLE READ transaction that took its snapshot."""
    import psycopg
    from django.db import connection

    settings = connection.settings_dict
    holder = psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"],
        port=settings["PORT"],
        application_name="mvcc_horizon holder",
    )
    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT count(*) FROM steady_queue_jobs")
    return holder


def _entries_read() -> int:
    """Entries the poll indexes' scans have read so far, dead ones included."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes "
            "WHERE relname = %s AND indexrelname LIKE 'sq_poll%%'",
            [TABLES[1]],
        )
        return cursor.fetchone()[0]


def _dead_tuples() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT relname, n_dead_tup FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [TABLES],
        )
        return dict(cursor.fetchall())


def _close_connections() -> None:
    from django.db import connections

    connections.close_all()


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="sq_history_mvcc")
    parser.add_argument("--hold", type=float, default=600, help="seconds the transaction is held")
    parser.add_argument("--before", type=float, default=60, help="seconds measured before")
    parser.add_argument("--after", type=float, default=60, help="seconds measured after")
    parser.add_argument("--every", type=float, default=10, help="seconds per sample")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
