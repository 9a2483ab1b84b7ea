"""Does Steady Queue keep its speed when the jobs table is big?

    python bench/big_tables.py                          # 50,000 then 10,000,000 finished jobs
    python bench/big_tables.py --db mysql --big 2000000

The database (``--name``, default sq_bench_big) is dropped, created and filled by the
dashboard's fill command with ``--small`` finished jobs (plus 10,000 failed and 10,000
scheduled), measured, filled up to ``--big`` finished jobs, and measured again; the
report gives both and their ratio. Medians of ``--repeat`` runs:

- single enqueue: ``task.enqueue()`` calls per second, one after another;
- bulk enqueue: jobs per second of ``enqueue_all`` with 2,000 jobs;
- drain: no-op jobs per second drained by ``manage.py steady_queue`` (2 processes of
  2 threads; first start to last finish);
- every dashboard page of ``steady_queue_dashboard_bench``, milliseconds;
- clearing: ``clear_finished_in_batches`` on the 20,000 oldest finished jobs, in its
  default batches of 500: rows per second, and the longest batch. Each batch is its own
  transaction, so that is the longest transaction clearing holds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SINGLE = 300  # single enqueues per run
BULK = 2_000  # jobs per enqueue_all, and jobs drained per run
CLEARED = 20_000


def main() -> int:
    options = _parse_args()
    os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = options.db, options.name
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.observability_settings"
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    from bench import system

    print(f"{os.cpu_count()} cores, {system._database()}, Django {django.get_version()}")
    _fill(finished=options.small, failed=10_000, scheduled=10_000)
    small = _measure(options.repeat)
    _fill(finished=options.big - options.small, failed=0, scheduled=0)
    big = _measure(options.repeat)
    print(f"\n{'measure':<36} {'small':>10} {'big':>10} {'big/small':>9}")
    for key, value in small.items():
        print(f"{key:<36} {value:>10,.1f} {big[key]:>10,.1f} {big[key] / value:>9.2f}")
    return 0


def _fill(*, finished: int, failed: int, scheduled: int) -> None:
    from django.core.management import call_command

    started = time.monotonic()
    sizes = {"ready": 0, "blocked": 0, "claimed": 0, "failed": failed, "scheduled": scheduled}
    call_command("steady_queue_dashboard_fill", finished=finished, stdout=StringIO(), **sizes)
    print(f"filled {finished:,} finished jobs in {time.monotonic() - started:.0f} s", flush=True)


def _measure(repeat: int) -> dict[str, float]:
    from steady_queue.models import Job

    row = {"finished jobs": float(Job.objects.filter(finished_at__isnull=False).count())}
    runs = [_engine() for _ in range(repeat)]
    row |= {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    row |= _pages(repeat)
    row |= _clearing()
    return row


def _engine() -> dict[str, float]:
    from bench import processes
    from bench.scale_tasks import noop
    from steady_queue.backend import enqueue_all
    from steady_queue.models import ClaimedExecution, Job, ReadyExecution

    first = _next_id()
    started = time.perf_counter()
    for _ in range(SINGLE):
        noop.enqueue()
    single = SINGLE / (time.perf_counter() - started)
    started = time.perf_counter()
    enqueue_all([(noop, (), {})] * BULK)
    bulk = BULK / (time.perf_counter() - started)
    _close_connections()
    with processes.running(processes.steady_queue("2x2")):
        deadline = time.monotonic() + 300
        while ReadyExecution.objects.exists() or ClaimedExecution.objects.exists():
            if time.monotonic() > deadline:
                raise TimeoutError("the workers did not drain the jobs in 300 s")
            time.sleep(0.1)
    attempts = [
        attempt
        for attempts in Job.objects.filter(pk__gte=first).values_list("attempts", flat=True)
        for attempt in attempts
    ]
    starts = [attempt["started_at"] for attempt in attempts]
    finishes = [attempt["finished_at"] for attempt in attempts]
    span = (_time(max(finishes)) - _time(min(starts))).total_seconds()
    return {
        "single enqueue, jobs/s": single,
        "bulk enqueue (2,000), jobs/s": bulk,
        "drain (2x2 workers), jobs/s": len(attempts) / span,
    }


def _pages(repeat: int) -> dict[str, float]:
    from steady_queue_dashboard.management.commands import steady_queue_dashboard_bench as pages

    client = pages.logged_in_client()
    return {
        f"page: {label}, ms": statistics.median(pages.measure(client, url, repeat)[0])
        for label, url in pages.pages()
    }


def _clearing() -> dict[str, float]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from steady_queue.models import Job

    oldest = Job.objects.filter(finished_at__isnull=False).order_by("finished_at")
    cutoff = oldest.values_list("finished_at", flat=True)[min(CLEARED, oldest.count() // 2)]
    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        cleared = Job.objects.clear_finished_in_batches(finished_before=cutoff)
        elapsed = time.perf_counter() - started
    batches: list[float] = []
    for query in captured.captured_queries:
        # Each batch starts by selecting its ids; the deletes that follow belong to it.
        if query["sql"].lstrip().upper().startswith("SELECT"):
            batches.append(0.0)
        batches[-1] += float(query["time"]) * 1000
    return {"clearing, rows/s": cleared / elapsed, "clearing, longest batch, ms": max(batches)}


def _next_id() -> int:
    from django.db.models import Max

    from steady_queue.models import Job

    return (Job.objects.aggregate(top=Max("pk"))["top"] or 0) + 1


def _close_connections() -> None:
    from django.db import connections

    connections.close_all()


def _time(value: str):
    from django.utils.dateparse import parse_datetime

    return parse_datetime(value)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", default="postgres", choices=["postgres", "mysql", "sqlite"])
    parser.add_argument("--name", default="sq_bench_big")
    parser.add_argument("--small", type=int, default=50_000, help="finished jobs, first")
    parser.add_argument("--big", type=int, default=10_000_000, help="finished jobs, then")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure (median)")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
