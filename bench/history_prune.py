"""Pruning a day of succeeded jobs: batch deletes, or the partitioned history (PostgreSQL).

    python bench/history_prune.py                      # 20,000 jobs a day, 3 rounds
    python bench/history_prune.py --per-day 100000 --rounds 5

Through the real feature (``steady_queue.retention.pruning.Pruning``, as a dispatcher or
``manage.py steady_queue_prune`` runs it), each round measures, in turn:

- plain: ``--per-day`` succeeded jobs that finished three days ago, deleted by the
  default succeeded rule (kept one day) in batches of ``prune_batch_size``
  (``partition_finished_by = None``, today's behaviour);
- move: as many jobs that finished ten minutes ago moved into the finished history
  (``partition_finished_by = "day"``): the price paid once per job, soon after its end,
  instead of the delete;
- drop: a history partition holding a day of as many rows, three days old, dropped by
  the same pass (one ``DROP TABLE``).

The order rotates between rounds; the fills are not timed. Each line gives the median
seconds and WAL written (``pg_current_wal_lsn()``), and the ratio to plain, with the
machine's load average. The database (``--name``, default sq_history_prune) is dropped
and created afresh, and dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODES = ("plain", "move", "drop")


def main() -> int:
    options = _parse_args()
    from bench import database

    with database.scratch_postgres(options.name, settings="bench.observability_settings"):
        return _run(options)


def _run(options: argparse.Namespace) -> int:
    from bench import system

    print(f"{os.cpu_count()} cores, {system._database()}")
    found: dict[str, list[tuple[float, int]]] = {mode: [] for mode in MODES}
    for round_ in range(options.rounds):
        for mode in MODES[round_ % 3 :] + MODES[: round_ % 3]:
            found[mode].append(_measure(mode, options.per_day))
            print(f"round {round_ + 1} {mode:<6} {found[mode][-1][0]:8.2f} s", flush=True)
    plain = statistics.median(s for s, _ in found["plain"])
    print(f"\n{options.per_day:,} jobs a day, {options.rounds} rounds, load {system.load():.1f}")
    print(f"{'':<6} {'median s':>9} {'MiB WAL':>9} {'/ plain':>8}")
    for mode in MODES:
        seconds = statistics.median(s for s, _ in found[mode])
        wal = statistics.median(w for _, w in found[mode]) / 2**20
        print(f"{mode:<6} {seconds:>9.2f} {wal:>9.1f} {seconds / plain:>8.2f}")
    return 0


def _measure(mode: str, count: int) -> tuple[float, int]:
    """Fill for ``mode``, then time one pruning pass and the WAL it writes."""
    from django.db import connection
    from django.utils import timezone

    import steady_queue
    from steady_queue.retention.pruning import Pruning

    now = timezone.now()
    steady_queue.partition_finished_by = None if mode == "plain" else "day"
    if mode == "drop":
        _fill_history(now - timedelta(days=3), count)
    else:
        age = timedelta(days=3) if mode == "plain" else timedelta(minutes=10)
        _fill_jobs(now - age, count)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("CHECKPOINT")
    wal, started = _wal(), time.perf_counter()
    Pruning(now=now).run(pause=0)
    took = time.perf_counter() - started, _wal() - wal
    _empty()
    return took


def _fill_jobs(finished, count: int) -> None:
    from steady_queue.models import Job

    Job.objects.bulk_create(
        [Job.new(**_job(finished - timedelta(seconds=n % 3600))) for n in range(count)],
        batch_size=2_000,
    )


def _fill_history(finished, count: int) -> None:
    from steady_queue.models import FinishedHistory, Job
    from steady_queue.retention import history

    history.ensure_partitions([history.day_of(finished)])
    top = (Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 10**9
    rows = []
    for n in range(count):
        values = _job(finished.replace(hour=12) + timedelta(seconds=n % 3600))
        values.pop("updated_at")
        rows.append(FinishedHistory(id=top + n, **values))
    FinishedHistory.objects.bulk_create(rows, batch_size=2_000)


def _job(finished) -> dict:
    return {
        "queue_name": "default",
        "task_path": "bench.tasks.noop",
        "arguments": {"args": [1, "an argument"], "kwargs": {"flag": True}},
        "return_value": {"ok": True},
        "attempts": [{"worker_id": "w", "started_at": finished.isoformat(), "error": None}],
        "created_at": finished - timedelta(seconds=2),
        "updated_at": finished,
        "finished_at": finished,
    }


def _empty() -> None:
    """Leave no rows for the next measure (not timed)."""
    from django.db import connection

    from steady_queue.models import FinishedHistory, Job, PruneTally

    Job.objects.all().delete()
    PruneTally.objects.all().delete()
    FinishedHistory.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM")


def _wal() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")
        return int(cursor.fetchone()[0])


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-day", type=int, default=20_000, help="jobs pruned a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--name", default="sq_history_prune", help="database (recreated)")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
