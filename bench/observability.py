"""Time a metrics scrape and the dashboard's Tasks page, empty and with a long history.

    python bench/observability.py --db postgres                 # 1,000,000 finished jobs
    python bench/observability.py --db sqlite --finished 10000  # a quick look

Both pages are measured on the same database twice in one run: with empty tables
(the baseline), then with ``--finished`` finished jobs in the jobs table, a backlog of
ready, scheduled and failed jobs, and ``--tasks`` tasks with 30 days of hourly rollup
rows (what 30 days of workers write). Each figure is the median of ``--repeat``
requests through Django's test client, the queries each sends beside it. The database
(``--name``, default sq_bench_obs) is dropped and created again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    options = _parse_args()
    os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = options.db, options.name
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.observability_settings"
    from bench import database, system

    database.recreate()
    import django

    django.setup()
    database.migrate()
    print(f"{os.cpu_count()} cores, {system._database()}, Django {django.get_version()}")
    pages = _pages()
    before = {name: _time(url, options.repeat) for name, url in pages.items()}
    started = time.monotonic()
    _fill(options)
    print(f"filled in {time.monotonic() - started:.0f} s")
    after = {name: _time(url, options.repeat) for name, url in pages.items()}
    print(f"\n{'page':<12} {'empty, ms':>10} {f'{options.finished:,} finished, ms':>24} queries")
    for name in pages:
        (empty, _), (full, queries) = before[name], after[name]
        print(f"{name:<12} {empty:>10.1f} {full:>24.1f} {queries:>7}")
    return 0


def _pages() -> dict[str, str]:
    from django.urls import NoReverseMatch, reverse

    pages = {"scrape": "/queue/metrics"}
    with contextlib.suppress(NoReverseMatch):  # a checkout before the Tasks page
        pages["tasks page"] = reverse("steady_queue_dashboard:tasks")
    return pages


def _time(url: str, repeat: int) -> tuple[float, int]:
    """Median milliseconds of ``repeat`` requests (after one warm-up), and its query count."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION="Bearer bench")
    user, _ = User.objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client.force_login(user)
    assert client.get(url).status_code == 200, url
    timings = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            began = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200, url
    return statistics.median(timings), len(queries)


def _fill(options: argparse.Namespace) -> None:
    from django.utils import timezone

    from bench import database
    from steady_queue import storage
    from steady_queue.models import Job, TaskRollup
    from steady_queue.models.task_rollup import hour_of

    database.preload_finished(options.finished)
    # Jobs of a task that is never run: built as the backend builds them, stored in one go.
    queues = [f"queue-{n}" for n in range(5)]
    later = timezone.now() + timedelta(hours=1)
    jobs = [_job(queue_name=queues[n % 5]) for n in range(1000)]
    jobs += [_job(queue_name="default", scheduled_at=later) for _ in range(200)]
    storage.for_alias().enqueue(jobs)
    ready = Job.objects.filter(ready_execution__isnull=False).order_by("pk")
    ids = list(ready.values_list("pk", flat=True)[:100])
    for job in Job.objects.filter(pk__in=ids):  # a hundred failed jobs
        job.ready_execution.delete()
        job.fail({"exception_class": "ValueError", "message": "bench", "traceback": ""})
    now, rows = hour_of(timezone.now()), []
    for task in range(options.tasks):
        for hour in range(24 * 30):
            rows.append(_rollup(f"app.tasks.task_{task}", "default", now - timedelta(hours=hour)))
        rows.append(_rollup(f"app.tasks.task_{task}", "default", TaskRollup.all_time()))
    TaskRollup.objects.bulk_create(rows, batch_size=2000)
    # Analyzed, as autovacuum would have done to a table that grew over 30 days.
    from django.db import connection

    analyze = {"postgresql": "ANALYZE", "mysql": "ANALYZE TABLE", "sqlite": "ANALYZE"}
    with connection.cursor() as cursor:
        for table in ("steady_queue_task_rollups", "steady_queue_ready_executions"):
            cursor.execute(f"{analyze[connection.vendor]} {table}")


def _job(**fields):
    from steady_queue.models import Job

    return Job.new(task_path="bench.tasks.noop", arguments={"args": [], "kwargs": {}}, **fields)


def _rollup(task_path: str, queue: str, period):
    from steady_queue.models import TaskRollup

    return TaskRollup(
        task_path=task_path,
        queue_name=queue,
        period=period,
        runs=120,
        succeeded=110,
        failed=4,
        retried=6,
        run_seconds=30.0,
        run_max=4.0,
        wait_seconds=12.0,
        wait_max=2.0,
        run_le_4=60,
        run_le_6=50,
        run_le_9=10,
        wait_le_3=100,
        wait_le_8=20,
    )


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--name", default="sq_bench_obs")
    parser.add_argument("--finished", type=int, default=1_000_000, help="finished jobs preloaded")
    parser.add_argument("--tasks", type=int, default=50, help="tasks with 30 days of rollups")
    parser.add_argument("--repeat", type=int, default=7, help="requests per figure (>= 3)")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
