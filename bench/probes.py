"""Do the health probe and the metrics scrape stay fast when the queue tables are huge?

    python bench/probes.py                       # 300,000 ready and 300,000 failed jobs
    python bench/probes.py --rows 10000000       # 10,000,000 of each (about 10 minutes to load)

PostgreSQL only. The database (``--name``, default sq_probes_bench) is dropped, created,
and filled in SQL (``INSERT ... SELECT`` over ``generate_series``, copies of one real
job) with ``--rows`` ready jobs and ``--rows`` failed jobs spread over ``--queues``
queues, then vacuumed and analyzed. Then, medians of ``--repeat`` runs after a warm-up:

- the health view (``?max_latency=5m``, as a load balancer would call it) and the
  metrics view (a bearer-token scrape), milliseconds per request;
- the queries they made before they read indexes (a ``Min(created_at)`` per queue over
  the ready jobs, a count per queue of ready jobs, and of failed jobs joined to their
  jobs), the baseline, in the same run.

The database is dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOKEN = "bench-probes"


def main() -> int:
    options = _parse_args()
    os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = "postgres", options.name
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.observability_settings"
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    from django.conf import settings

    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN
    from bench import system

    print(f"{os.cpu_count()} cores, {system._database()}, Django {django.get_version()}")
    try:
        _fill(options.rows, options.queues, options.executions_only)
        _report(options.repeat)
    finally:
        if not options.keep:
            from django.db import connections

            connections.close_all()
            _drop(options.name)
    return 0


def _fill(rows: int, queues: int, executions_only: bool) -> None:
    from django.db import connection

    from steady_queue.models import Job

    started = time.monotonic()
    template = Job.objects.get(pk=_template_job()) if not executions_only else None
    columns = [f.column for f in Job._meta.concrete_fields if f.column not in ("id", "queue_name")]
    copied = ", ".join(columns)
    queue = f"'q' || (g %% {queues})"
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
        cursor.execute("DELETE FROM steady_queue_ready_executions")
        if executions_only:
            _fill_executions_only(cursor, rows, queues)
            rows = 0
        for state in ("ready", "failed") if rows else ():
            first = _next_id(cursor)
            cursor.execute(
                f"INSERT INTO steady_queue_jobs (queue_name, {copied}) "
                f"SELECT {queue}, {copied} FROM steady_queue_jobs, generate_series(1, %s) g "
                "WHERE id = %s",
                [rows, template.pk],
            )
            if state == "ready":
                cursor.execute(
                    "INSERT INTO steady_queue_ready_executions "
                    "(job_id, queue_name, priority, created_at) "
                    "SELECT id, queue_name, 0, now() - interval '1 minute' "
                    "FROM steady_queue_jobs WHERE id >= %s",
                    [first],
                )
            else:
                cursor.execute(
                    "INSERT INTO steady_queue_failed_executions "
                    "(job_id, queue_name, exception_class, message, backtrace, created_at) "
                    "SELECT id, queue_name, 'builtins.ValueError', 'boom', '', now() "
                    "FROM steady_queue_jobs WHERE id >= %s",
                    [first],
                )
            print(f"  {rows:,} {state} jobs in {time.monotonic() - started:.0f} s", flush=True)
        if template is not None:
            cursor.execute("DELETE FROM steady_queue_jobs WHERE id = %s", [template.pk])
    connection.close()
    with connection.cursor() as cursor:  # VACUUM cannot run in a transaction block
        for table in ("jobs", "ready_executions", "failed_executions"):
            cursor.execute(f"VACUUM ANALYZE steady_queue_{table}")
    print(f"filled and vacuumed in {time.monotonic() - started:.0f} s", flush=True)


def _fill_executions_only(cursor, rows: int, queues: int) -> None:
    # Execution rows whose jobs are not there (foreign keys unchecked for this session):
    # the probe and the scrape read the execution tables' indexes only, and loading 2 x
    # 10,000,000 jobs takes too long on a small machine. The baseline's failed count joins
    # the jobs, so it finds nothing here: it is meaningful in the full fill only.
    started = time.monotonic()
    queue = f"'q' || (g %% {queues})"
    cursor.execute("SET session_replication_role = replica")
    cursor.execute(
        "INSERT INTO steady_queue_ready_executions (job_id, queue_name, priority, created_at) "
        f"SELECT g, {queue}, 0, now() - interval '1 minute' FROM generate_series(1, %s) g",
        [rows],
    )
    print(f"  {rows:,} ready executions in {time.monotonic() - started:.0f} s", flush=True)
    cursor.execute(
        "INSERT INTO steady_queue_failed_executions "
        "(job_id, queue_name, exception_class, message, backtrace, created_at) "
        f"SELECT g, {queue}, 'builtins.ValueError', 'boom', '', now() "
        "FROM generate_series(%s, %s) g",
        [rows + 1, 2 * rows],
    )
    print(f"  {rows:,} failed executions in {time.monotonic() - started:.0f} s", flush=True)
    cursor.execute("SET session_replication_role = DEFAULT")


def _template_job() -> int:
    # A job as the backend builds it, of a task that is never run.
    from steady_queue.models import Job

    job = Job.new(task_path="bench.tasks.noop", arguments={"args": [], "kwargs": {}})
    job.save()
    return job.pk


def _next_id(cursor) -> int:
    cursor.execute("SELECT coalesce(max(id), 0) + 1 FROM steady_queue_jobs")
    return cursor.fetchone()[0]


def _report(repeat: int) -> None:
    from django.test import RequestFactory

    from steady_queue.health import health_view
    from steady_queue.metrics import metrics_view

    factory = RequestFactory()

    def health() -> None:
        response = health_view(factory.get("/queue/health", {"max_latency": "5m"}))
        assert response.status_code in (200, 503), response.content

    def scrape() -> None:
        request = factory.get("/queue/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        response = metrics_view(request)
        assert response.status_code == 200, response.content

    measures = {
        "health view (ms)": health,
        "metrics scrape (ms)": scrape,
        "before: health latency query (ms)": _old_latency,
        "before: ready + failed gauges (ms)": _old_gauges,
    }
    measures |= {
        "health view, server time (ms)": lambda: _server_time(health),
        "metrics scrape, server time (ms)": lambda: _server_time(scrape),
    }
    print(f"\n{'measure':<40} {'median':>9} {'min':>9} {'max':>9}")
    for name, call in measures.items():
        call()  # warm-up: caches, the first connection
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            server = call()
            times.append(server if server is not None else (time.perf_counter() - started) * 1000)
        print(f"{name:<40} {statistics.median(times):>9.1f} {min(times):>9.1f} {max(times):>9.1f}")


def _server_time(request) -> float:
    """The database's own time for the statements of ``request``: EXPLAIN ANALYZE of each.

    What the queries cost the server, without the waits for a core that a loaded
    machine adds to every round trip.
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        request()
    total = 0.0
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query['sql']}")
            plan = cursor.fetchone()[0]
            plan = plan if isinstance(plan, list) else json.loads(plan)
            total += plan[0]["Planning Time"] + plan[0]["Execution Time"]
    return total


def _old_latency() -> None:
    # HealthCheck._slow_queues before it read the poll index: a scan of every ready job.
    from django.db.models import Min

    from steady_queue.models import Pause, ReadyExecution

    ready = ReadyExecution.objects.exclude(queue_name__in=Pause.objects.values("queue_name"))
    list(ready.values("queue_name").annotate(oldest=Min("created_at")).order_by("queue_name"))


def _old_gauges() -> None:
    # The collector's ready and failed queries before: every row, failed ones joined.
    from django.db.models import Count, Min

    from steady_queue.models import FailedExecution, ReadyExecution

    ready = ReadyExecution.objects.values_list("queue_name").annotate(
        jobs=Count("pk"), oldest=Min("created_at")
    )
    list(ready.order_by("queue_name"))
    failed = FailedExecution.objects.values_list("job__queue_name")
    list(failed.annotate(jobs=Count("pk")).order_by())


def _drop(name: str) -> None:
    from bench import database

    with database.postgres_server() as postgres:
        postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000, help="ready jobs, and failed jobs")
    parser.add_argument("--queues", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--name", default="sq_probes_bench")
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    parser.add_argument(
        "--executions-only",
        action="store_true",
        help="ready and failed execution rows without their jobs (fast; no baseline)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
