"""How Steady Queue's cost grows with the number of worker processes on one PostgreSQL.

    python bench/scale.py                                  # 2, 8, 32 and 64 processes
    python bench/scale.py --workers 2,8 --jobs 1000 --repeat 3

For each number of worker processes (``--workers``, each with ``--threads`` threads,
under one ``manage.py steady_queue``) and each kind of job (``noop``, and ``sleep``:
50 ms of waiting, as an I/O-bound job), ``--jobs`` jobs are enqueued and then drained.
Reported per row, the median of ``--repeat`` runs:

- throughput: jobs / (last finish - first start); for 50 ms jobs also as a share of
  the ideal (every thread always in a job: processes x threads / 0.05 s);
- gap p50/p99: on each worker thread, the time from the end of one job (before its
  outcome is written) to the claim of its next (the claim's timestamp): the queue's
  own overhead per job as the jobs see it. A thread that finishes and claims in one
  statement (PostgreSQL) claims at its transaction's start, so this is near 0 there;
- database CPU per 1,000 jobs: user + system time of the PostgreSQL server processes
  serving the benchmark database, sampled from /proc;
- lock waits: the most sessions seen waiting on a lock at once (pg_stat_activity,
  sampled every 0.2 s), and the share of samples with any;
- dead tuples left in the jobs and execution tables (pg_stat_user_tables), before
  autovacuum.

Each run's jobs are enqueued once every worker process has started, so that the slow
start of many processes on few cores is not counted.

``--pgbouncer``: the worker processes connect through a PgBouncer in transaction pooling
mode (Debian's package; ``--pool`` server connections) and LISTEN on a direct
connection, as "Behind PgBouncer" (docs/explanation/scaling.md) sets it up. The samples
of database CPU and lock waits still see every server process.

The database (``--name``, default sq_bench_scale) is dropped and created again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    options = _parse_args()
    os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = "postgres", options.name
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.observability_settings"
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    from bench import system

    print(f"{os.cpu_count()} cores, {system._database()}, Django {django.get_version()}")
    print(f"{options.jobs:,} jobs per run, {options.threads} threads per process")
    with contextlib.ExitStack() as stack:
        if options.pgbouncer:
            from tests.processes import pgbouncer

            port = stack.enter_context(pgbouncer.running(pool_size=options.pool))
            # Read by bench/settings.py in the worker processes only.
            os.environ["SQ_BENCH_PGBOUNCER_PORT"] = str(port)
            print(f"through PgBouncer in transaction mode, {options.pool} server connections")
        _table(options)
    return 0


def _table(options: argparse.Namespace) -> None:
    header = (
        f"{'kind':<6} {'processes':>9} {'jobs/s':>8} {'of ideal':>8} "
        f"{'gap p50 ms':>10} {'gap p99 ms':>10} "
        f"{'db cpu s/1k':>11} {'lock waits max':>14} {'with waits':>10} {'dead tuples':>11}"
    )
    print(header)
    for kind in options.kinds.split(","):
        for workers in map(int, options.workers.split(",")):
            runs = [_run(kind, workers, options) for _ in range(options.repeat)]
            row = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            ideal = _ideal(kind, row, workers, options)
            print(
                f"{kind:<6} {workers:>9} {row['rate']:>8,.0f} {ideal} {row['gap50']:>10.1f} "
                f"{row['gap99']:>10.1f} {row['cpu']:>11.2f} {row['waits']:>14.0f} "
                f"{row['waiting']:>9.0%} {row['dead']:>11,.0f}",
                flush=True,
            )


def _ideal(kind: str, row: dict, workers: int, options: argparse.Namespace) -> str:
    """For 50 ms jobs: the throughput as a share of every thread always sleeping."""
    if kind != "sleep":
        return f"{'':>8}"
    return f"{row['rate'] / (workers * options.threads / 0.05):>8.0%}"


def _run(kind: str, workers: int, options: argparse.Namespace) -> dict[str, float]:
    from django.db import connection

    from bench import processes
    from steady_queue import storage
    from steady_queue.models import ClaimedExecution, Job, Process, ReadyExecution

    _truncate()
    task_path = {"noop": "bench.scale_tasks.noop", "sleep": "bench.scale_tasks.sleep_50ms"}[kind]
    jobs = [
        Job.new(task_path=task_path, queue_name="default", arguments={"args": [], "kwargs": {}})
        for _ in range(options.jobs)
    ]
    sampler = _Sampler()
    config = f"{workers}x{options.threads}"
    with processes.running(processes.steady_queue(config)):
        deadline = time.monotonic() + options.deadline
        while Process.objects.filter(kind="Worker").count() < workers:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{config}: not every worker process started in time")
            time.sleep(0.2)
        sampler.start()
        sampler.baseline_taken.wait(10)
        storage.for_alias().enqueue(jobs)
        connection.close()
        while ReadyExecution.objects.exists() or ClaimedExecution.objects.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{config} did not drain {options.jobs} jobs in time")
            time.sleep(0.1)
        sampler.stop()
    attempts = [
        attempt
        for attempts in Job.objects.values_list("attempts", flat=True)
        for attempt in attempts
    ]
    gaps = _gaps(attempts, options.threads)
    starts = [_time(a["started_at"]) for a in attempts]
    finishes = [_time(a["finished_at"]) for a in attempts]
    return {
        "rate": len(attempts) / (max(finishes) - min(starts)).total_seconds(),
        "gap50": _percentile(gaps, 50) * 1000,
        "gap99": _percentile(gaps, 99) * 1000,
        "cpu": sampler.cpu_seconds() / len(attempts) * 1000,
        "waits": sampler.most_waiting,
        "waiting": sampler.share_waiting(),
        "dead": _dead_tuples(),
    }


def _gaps(attempts: list[dict], threads: int) -> list[float]:
    """On each worker thread, the time from the end of a job to the start of its next.

    Attempts name their process, not their thread. With a backlog every thread is busy,
    so a process's k-th start took the thread that its (k - threads)-th finish freed.
    """
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for attempt in attempts:
        by_worker[attempt["worker_id"]].append(attempt)
    gaps = []
    for runs in by_worker.values():
        starts = sorted(_time(run["started_at"]) for run in runs)
        finishes = sorted(_time(run["finished_at"]) for run in runs)
        for finish, start in zip(finishes, starts[threads:], strict=False):
            gaps.append(max((start - finish).total_seconds(), 0.0))
    return gaps or [0.0]


class _Sampler(threading.Thread):
    """Every 0.2 s: the database server processes' CPU time and the sessions waiting on locks."""

    def __init__(self):
        super().__init__(daemon=True)
        self._stop = threading.Event()
        self._cpu: dict[int, float] = {}
        self._before: dict[int, float] = {}
        self.baseline_taken = threading.Event()
        self.most_waiting = 0
        self._samples = self._with_waits = 0

    def run(self) -> None:
        import psycopg
        from django.db import connection

        from bench import system

        settings = connection.settings_dict
        with psycopg.connect(
            host=settings["HOST"],
            port=settings["PORT"],
            user=settings["USER"],
            dbname=settings["NAME"],
            autocommit=True,
        ) as own:
            first = True
            while True:
                rows = own.execute(
                    "SELECT pid, wait_event_type = 'Lock' FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchall()
                waiting = sum(1 for _, lock in rows if lock)
                self.most_waiting = max(self.most_waiting, waiting)
                self._samples += 1
                self._with_waits += waiting > 0
                for pid, _ in rows:
                    self._cpu[pid] = max(self._cpu.get(pid, 0.0), system.cpu_seconds([pid]))
                    # A connection older than the run (PgBouncer keeps its server
                    # connections) counts from the run's start; a newer one from zero.
                    self._before.setdefault(pid, self._cpu[pid] if first else 0.0)
                first = False
                self.baseline_taken.set()
                if self._stop.wait(0.2):
                    break

    def stop(self) -> None:
        self._stop.set()
        self.join(5)

    def cpu_seconds(self) -> float:
        return sum(cpu - self._before.get(pid, 0.0) for pid, cpu in self._cpu.items())

    def share_waiting(self) -> float:
        return self._with_waits / self._samples if self._samples else 0.0


def _truncate() -> None:
    from django.apps import apps
    from django.db import connection

    tables = [model._meta.db_table for model in apps.get_app_config("steady_queue").get_models()]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE TABLE {', '.join(tables)} CASCADE")
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("SELECT pg_stat_reset()")


def _dead_tuples() -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables "
            "WHERE relname LIKE 'steady_queue_%%'"
        )
        return float(cursor.fetchone()[0])


def _percentile(samples: list[float], percentile: int) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(percentile / 100 * (len(ordered) - 1)))]


def _time(value: str) -> datetime:
    from django.utils.dateparse import parse_datetime

    return parse_datetime(value)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="sq_bench_scale")
    parser.add_argument("--workers", default="2,8,32,64", help="worker processes per row")
    parser.add_argument("--threads", type=int, default=2, help="threads per worker process")
    parser.add_argument("--jobs", type=int, default=3000, help="jobs per run")
    parser.add_argument("--kinds", default="noop,sleep", help="noop and/or sleep (50 ms)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (median)")
    parser.add_argument("--deadline", type=float, default=600, help="seconds per drain at most")
    parser.add_argument("--pgbouncer", action="store_true", help="workers through PgBouncer")
    parser.add_argument("--pool", type=int, default=20, help="PgBouncer's server connections")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
