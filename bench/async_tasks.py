"""How long N ``async def`` tasks that each ``await asyncio.sleep(1)`` take with one worker.

    python bench/async_tasks.py                       # PostgreSQL; --db mysql or sqlite too
    python bench/async_tasks.py --jobs 1000 --rounds 5

The real ``manage.py steady_queue`` runs one worker process and nothing else. In each
round, this process enqueues the jobs (``enqueue_all``, 500 per call) once the worker
is registered, then waits until every one has succeeded; a figure is the time from the
enqueue's commit to the last success (polled every 10 ms), its median over ``--rounds``.
Two configurations take turns in each round, so that the machine's drift hits both:

- ``loop``: two threads and an event loop of ``--concurrency`` slots
  (``async_concurrency``), ``--jobs`` jobs;
- ``threads``: the thread pool only, ``--baseline-threads`` threads (each runs an async
  job on an event loop of its own, one at a time), ``--baseline-jobs`` jobs: as many
  as it runs in a few seconds, for its rate.

On PostgreSQL it also prints the database's transactions per job over a round (from
``pg_stat_database``, once the worker has stopped: its claims, finishes, heartbeats and
polls, its start's and stop's; this process's enqueues and polls are left out). The
database (``--name``, default sq_bench_async) is dropped and created again.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    options = _parse_args()
    from bench import database

    database.prepare(options.db, options.name)
    from bench import system

    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    runs = {
        "loop": (f"1x2a{options.concurrency}", options.jobs),
        "threads": (f"1x{options.baseline_threads}", options.baseline_jobs),
    }
    spans: dict[str, list[float]] = {name: [] for name in runs}
    per_job: dict[str, list[float]] = {name: [] for name in runs}
    for round_number in range(1, options.rounds + 1):
        for name, (config, jobs) in runs.items():
            span, transactions = _round(config, jobs, options.seconds)
            spans[name].append(span)
            if transactions is not None:
                per_job[name].append(transactions / jobs)
        figures = ", ".join(f"{name} {spans[name][-1]:.2f} s" for name in runs)
        print(f"round {round_number}: {figures} (load {system.load():.2f})", flush=True)
    for name, (config, jobs) in runs.items():
        median = statistics.median(spans[name])
        print(
            f"{name} (W{config}): {jobs:,} naps of {options.seconds:g} s in "
            f"{median:.2f} s, median of {options.rounds} ({jobs / median:,.0f} jobs/s)"
            + _per_job(per_job[name])
        )
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--name", default="sq_bench_async")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=1000, help="async_concurrency")
    parser.add_argument("--seconds", type=float, default=1.0, help="each task's sleep")
    parser.add_argument("--baseline-jobs", type=int, default=40)
    parser.add_argument("--baseline-threads", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    return parser.parse_args()


def _per_job(values: list[float]) -> str:
    return f", {statistics.median(values):.2f} transactions/job" if values else ""


def _round(config: str, jobs: int, seconds: float) -> tuple[float, int | None]:
    """The time for ``jobs`` naps, and the transactions the round cost (PostgreSQL)."""
    from django.db import connection

    from bench import database, processes
    from bench.tasks import nap
    from steady_queue.backend import enqueue_all
    from steady_queue.models import Job, Process

    database.truncate()
    polls = 0

    def all_done() -> bool:
        nonlocal polls
        polls += 1
        return Job.objects.filter(finished_at__isnull=False).count() == jobs

    with processes.running(processes.steady_queue(config)):
        _wait_for(lambda: Process.objects.filter(kind=Process.Kind.WORKER).exists(), 30)
        before = _transactions()
        calls = [(nap, (seconds,), {}) for _ in range(jobs)]
        for start in range(0, jobs, 500):
            enqueue_all(calls[start : start + 500])
        enqueued = time.monotonic()
        _wait_for(all_done, 600, interval=0.01)
        span = time.monotonic() - enqueued
    connection.close()  # a backend's counts reach pg_stat_database when it ends
    if before is None:
        return span, None
    # Less this process's own: its enqueues (one per call) and its polls.
    return span, _transactions(settled=True) - before - polls - len(range(0, jobs, 500))


def _transactions(*, settled: bool = False) -> int | None:
    """The database's transactions so far (PostgreSQL; None elsewhere).

    ``settled``: once every other session has ended (and so reported its counts).
    """
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:

        def alone() -> bool:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return cursor.fetchone()[0] == 0

        if settled:
            _wait_for(alone, 30)
        cursor.execute(
            "SELECT pg_stat_clear_snapshot(), xact_commit + xact_rollback "
            "FROM pg_stat_database WHERE datname = current_database()"
        )
        return cursor.fetchone()[1]


def _wait_for(condition, timeout: float, *, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up after {timeout:.0f} s")
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())
