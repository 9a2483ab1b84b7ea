"""Statements and round trips per job of each storage on one database, side by side.

    python bench/round_trips.py --db mysql --name sq_bench_rt

For every storage that runs on the database (the portable ORM one, then its fast one),
counts what Django logs for a single enqueue and for the worker path of 100 jobs
(bench/measures.py's count: a busy thread, and polls of 5), and the round trips: the
logged statements (BEGIN and COMMIT included) plus, on MySQL/MariaDB, the
``SET autocommit=1`` that ends each Django transaction there and that Django does not
log (its ``BEGIN`` is the ``SET autocommit=0``). Then times 300 single enqueues per
storage, in alternating rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="mysql")
    parser.add_argument("--name", default="sq_bench_rt")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    os.environ.update(SQ_BENCH_DB=options.db, SQ_BENCH_NAME=options.name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    from steady_queue import storage

    for each in storage.implementations():
        with storage.using(each):
            print(f"{type(each).__name__}:")
            for name, (statements, trips) in _counts().items():
                print(f"  {name}: {statements:.2f} statements, {trips:.2f} round trips")
    rates: dict[str, list[float]] = {}
    for round_ in range(options.rounds):
        order = storage.implementations()
        for each in order if round_ % 2 == 0 else reversed(order):
            with storage.using(each):
                rates.setdefault(type(each).__name__, []).append(_single_rate(300))
    for name, values in rates.items():
        runs = ", ".join(f"{value:.0f}" for value in values)
        print(f"single enqueue, {name}: {statistics.median(values):.0f} jobs/s ({runs})")
    return 0


def _counts() -> dict[str, tuple[float, float]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench import database
    from bench.measures import _bulk
    from bench.tasks import noop
    from steady_queue import storage
    from steady_queue.models import Job, Process
    from steady_queue.processes.worker import Worker
    from steady_queue.runner.perform import perform

    database.truncate()
    with CaptureQueriesContext(connection) as single:
        noop.enqueue()
    counts = {"single enqueue": _per(single.captured_queries, 1)}
    for batch, how in [(1, "a busy thread, per job"), (5, "polls of 5, per job")]:
        # As bench/measures.py's _count_statements, keeping the statements themselves.
        database.truncate()
        worker = Worker(queues=["*"], threads=batch)
        worker.process = Process.register(kind=Process.Kind.WORKER, name="bench", pid=0)
        _bulk(100, 100)
        with CaptureQueriesContext(connection) as captured:
            if batch == 1:
                worker._run(storage.claim(["*"], 1, worker.process)[0])
            while claimed := storage.claim(["*"], batch, worker.process):
                for execution in claimed:
                    perform(execution)
        assert not Job.objects.filter(finished_at__isnull=True).exists()
        counts[how] = _per(captured.captured_queries, 100)
    return counts


def _per(queries: list[dict], jobs: int) -> tuple[float, float]:
    from django.db import connection

    statements = len(queries)
    trips = statements
    if connection.vendor == "mysql":
        trips += sum(1 for q in queries if q["sql"] in ("COMMIT", "ROLLBACK"))
    return statements / jobs, trips / jobs


def _single_rate(count: int) -> float:
    from bench import database
    from bench.tasks import noop

    database.truncate()
    started = time.perf_counter()
    for _ in range(count):
        noop.enqueue()
    return count / (time.perf_counter() - started)


if __name__ == "__main__":
    raise SystemExit(main())
