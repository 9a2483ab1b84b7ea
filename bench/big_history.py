"""Does Steady Queue keep its speed with a very long finished history? (PostgreSQL)

    python bench/big_history.py                           # 1,000 then 100,000,000
    python bench/big_history.py --big 20000000 --prune-day 5000000

The database (``--name``, default sq_history_big) is dropped and created, filled with
``--small`` finished jobs by the dashboard's fill command (realistic rows: tasks, queues,
arguments, one attempt each), measured; then grown to ``--big`` finished jobs by the
server itself (``INSERT ... SELECT`` over ``generate_series``, copies of those rows with
their own ids, arguments and finish times, ``--prune-day`` jobs a day, the newest an
hour old), vacuumed and analyzed, and measured again. Medians and p95 of ``--repeat``
runs, the two sizes side by side with their ratio:

- drain: no-op jobs per second drained by ``manage.py steady_queue`` (2 processes of
  2 threads; 2,000 jobs from ``enqueue_all``, first start to last finish);
- pickup latency: one job enqueued into idle workers, enqueue to start (median, p95);
- the dashboard's overview, finished list and a finished job's page, and the metrics
  scrape (``/queue/metrics``): p95 of ``--requests`` requests, milliseconds.

Then the oldest day (``--prune-day`` rows) is pruned twice, with the time it takes and
the WAL it writes (``pg_current_wal_lsn()`` before and after):

- plain: ``clear_finished_in_batches`` on the jobs table, 500 rows a transaction;
- partitioned: the same rows in a table partitioned by finished day (one partition
  per day), and the day's partition dropped (``DROP TABLE``).

The disk used (``pg_database_size``, and the file system's free space) is printed after
each step. The database is dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DRAINED = 2_000
PICKUPS = 20
# Rows a statement of the fill inserts: a transaction each, so WAL can be recycled.
FILL_CHUNK = 1_000_000
# The small set's jobs are ids 1 to --small (a fresh database): the rows copied.
SMALL_TOP = 0


def main() -> int:
    options = _parse_args()
    from bench import database

    # _run sets Django up itself, after loading the rows.
    with database.scratch_postgres(
        options.name, settings="bench.observability_settings", set_up=False, keep=options.keep
    ):
        return _run(options)


def _run(options: argparse.Namespace) -> int:
    import django

    django.setup()
    from bench import database, system

    database.migrate()
    print(f"{os.cpu_count()} cores, {system._database()}, Django {django.get_version()}")
    global SMALL_TOP
    SMALL_TOP = options.small
    _fill_small(options.small)
    _disk("small")
    small = _measure(options)
    started = time.monotonic()
    _fill_big(options.big - options.small, options.prune_day)
    print(f"filled {options.big - options.small:,} in {time.monotonic() - started:.0f} s")
    _disk("big")
    big = _measure(options)
    print(f"\n{'measure':<40} {'small':>10} {'big':>10} {'big/small':>9}")
    for key, value in small.items():
        ratio = big[key] / value if value else float("nan")
        print(f"{key:<40} {value:>10,.1f} {big[key]:>10,.1f} {ratio:>9.2f}")
    print()
    pruned = options.pruned or options.prune_day
    for label, (seconds, wal) in _prune(pruned).items():
        print(f"prune {pruned:,} rows, {label:<12} {seconds:>8.1f} s {wal / 2**20:>10,.1f} MiB WAL")
    _disk("after pruning")
    return 0


def _fill_small(count: int) -> None:
    from django.core.management import call_command

    sizes = {"ready": 0, "blocked": 0, "running": 0, "failed": 0, "scheduled": 0}
    sizes |= {"throttled": 0, "batches": 0, "workflows": 0}
    call_command("steady_queue_dashboard_fill", finished=count, days=1, stdout=StringIO(), **sizes)


def _fill_big(count: int, per_day: int) -> None:
    """``count`` more finished jobs, copies of the small ones, ``per_day`` a finished day."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM steady_queue_jobs")
        last = cursor.fetchone()[0]
    top = last + count
    # Finish times: ``per_day`` a day, the newest an hour ago (the small set's hour).
    finished = (
        f"now() - interval '1 hour' - make_interval(secs => ({top} - g) * {86_400 / per_day})"
    )
    done = 0
    started = time.monotonic()
    # Without its secondary indexes, then built once each: a bulk load's usual way.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN pg_class c "
            "ON c.relname = i.indexname JOIN pg_index x ON x.indexrelid = c.oid "
            "WHERE i.tablename = 'steady_queue_jobs' AND NOT x.indisprimary "
            "AND NOT x.indisunique"
        )
        indexes = cursor.fetchall()
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
    while done < count:
        rows = min(FILL_CHUNK, count - done)
        low = last + 1 + done
        with connection.cursor() as cursor:
            cursor.execute(_copies("steady_queue_jobs", low, low + rows - 1, finished))
        done += rows
        rate = done / (time.monotonic() - started)
        print(f"  {done:>12,} rows, {rate:,.0f} rows/s, {_free()} free", flush=True)
        if shutil.disk_usage("/work").free < 20 * 2**30:
            raise SystemExit("stopped: less than 20 GB free on /work")
    with connection.cursor() as cursor:
        for name, definition in indexes:
            built = time.monotonic()
            cursor.execute(definition)
            print(f"  index {name} in {time.monotonic() - built:.0f} s", flush=True)
        cursor.execute("SELECT setval('steady_queue_jobs_id_seq', %s)", [top])
        cursor.execute("VACUUM ANALYZE steady_queue_jobs")


def _copies(table: str, low: int, high: int, finished: str) -> str:
    """INSERT ... SELECT of jobs ``low`` to ``high`` (``g``) into ``table``: copies of the
    small set's rows (round robin), each with its id, arguments and ``finished`` time."""
    from steady_queue.models import Job

    columns = [f.column for f in Job._meta.concrete_fields if not f.primary_key]
    chosen = {
        "finished_at": finished,
        "created_at": f"{finished} - interval '2 seconds'",
        "updated_at": finished,
        "arguments": "jsonb_build_object('args', jsonb_build_array(g), "
        "'kwargs', t.arguments->'kwargs')",
    }
    listed = ", ".join(f'"{c}"' for c in columns)
    selected = ", ".join(chosen.get(c, f't."{c}"') for c in columns)
    return (
        f"WITH templates AS (SELECT *, row_number() OVER (ORDER BY id) - 1 AS n "
        f"FROM steady_queue_jobs WHERE id <= {SMALL_TOP}) "
        f"INSERT INTO {table} (id, {listed}) SELECT g, {selected} "
        f"FROM generate_series({low}, {high}) AS g "
        f"JOIN templates t ON t.n = g % (SELECT count(*) FROM templates)"
    )


def _measure(options: argparse.Namespace) -> dict[str, float]:
    from steady_queue.models import Job

    row = {"finished jobs": float(Job.objects.filter(finished_at__isnull=False).count())}
    row |= _engine(options.repeat)
    row |= _pages(options.requests)
    return row


def _engine(repeat: int) -> dict[str, float]:
    from bench import processes
    from bench.scale_tasks import noop
    from steady_queue.backend import enqueue_all
    from steady_queue.models import Job, Process

    _close_connections()
    drains, pickups = [], []
    with processes.running(processes.steady_queue("2x2")):
        _until(lambda: Process.objects.filter(kind="Worker").count() >= 2, "two workers")
        for _ in range(repeat):
            for _ in range(PICKUPS):
                result = noop.enqueue()
                _until(lambda pk=result.id: _finished(pk), "a job's finish")
                job = Job.objects.get(pk=result.id)
                waited = _time(job.attempts[0]["started_at"]) - job.created_at
                pickups.append(waited.total_seconds() * 1000)
            first = _next_id()
            enqueue_all([(noop, (), {})] * DRAINED)
            _until(
                lambda first=first: (
                    not Job.objects.filter(pk__gte=first, finished_at=None).exists()
                ),
                "the drain",
                timeout=600,
            )
            attempts = [
                a
                for attempts in Job.objects.filter(pk__gte=first).values_list("attempts", flat=True)
                for a in attempts
            ]
            starts = [_time(a["started_at"]) for a in attempts]
            finishes = [_time(a["finished_at"]) for a in attempts]
            drains.append(len(attempts) / (max(finishes) - min(starts)).total_seconds())
    return {
        "drain (2x2 workers), jobs/s": statistics.median(drains),
        "pickup latency median, ms": statistics.median(pickups),
        "pickup latency p95, ms": _p95(pickups),
    }


def _pages(requests: int) -> dict[str, float]:
    from django.urls import reverse

    from steady_queue.models import Job, states
    from steady_queue_dashboard.management.commands import steady_queue_dashboard_bench as bench

    client = bench.logged_in_client()
    job = Job.objects.filter(finished_at__isnull=False).order_by("-pk").first()
    urls = {
        "overview": reverse("steady_queue_dashboard:overview"),
        "finished list": reverse("steady_queue_dashboard:job-list", args=[states.FINISHED]),
        "finished job page": reverse("steady_queue_dashboard:job-detail", args=[job.pk]),
    }
    found = {
        f"{label} p95, ms": _p95(bench.measure(client, url, requests)[0])
        for label, url in urls.items()
    }
    times = []
    for _ in range(requests + 1):
        started = time.perf_counter()
        response = client.get("/queue/metrics")  # a staff user may scrape
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    found["metrics scrape p95, ms"] = _p95(times[1:])
    return found


def _prune(per_day: int) -> dict[str, tuple[float, int]]:
    """Prune the oldest ``per_day`` rows: batch deletes, then a dropped partition."""
    from django.db import connection

    from steady_queue.models import Job

    oldest = Job.objects.filter(finished_at__isnull=False).order_by("finished_at")
    cutoff = oldest.values_list("finished_at", flat=True)[per_day - 1] + timedelta(microseconds=1)
    found = {}
    wal, started = _wal(), time.perf_counter()
    cleared = Job.objects.clear_finished_in_batches(finished_before=cutoff)
    found["plain"] = (time.perf_counter() - started, _wal() - wal)
    print(f"plain: cleared {cleared:,} rows", flush=True)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE bench_history (LIKE steady_queue_jobs INCLUDING DEFAULTS) "
            "PARTITION BY RANGE (finished_at)"
        )
        cursor.execute("CREATE INDEX ON bench_history (finished_at)")
        cursor.execute("CREATE INDEX ON bench_history (queue_name, finished_at)")
        cursor.execute("CREATE INDEX ON bench_history (task_path, finished_at)")
        cursor.execute(
            "CREATE TABLE bench_history_day PARTITION OF bench_history "
            "FOR VALUES FROM ('2000-01-01') TO ('2000-01-02')"
        )
        finished = f"'2000-01-01'::timestamptz + make_interval(secs => g * 86399.0 / {per_day})"
        for low in range(1, per_day + 1, FILL_CHUNK):
            high = min(low + FILL_CHUNK - 1, per_day)
            cursor.execute(_copies("bench_history", low, high, finished))
        _disk("partitioned day filled")
        cursor.execute("CHECKPOINT")
        wal, started = _wal(), time.perf_counter()
        cursor.execute("DROP TABLE bench_history_day")
        found["partitioned"] = (time.perf_counter() - started, _wal() - wal)
        cursor.execute("DROP TABLE bench_history")
    return found


def _wal() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")
        return int(cursor.fetchone()[0])


def _finished(pk: int) -> bool:
    from steady_queue.models import Job

    return Job.objects.filter(pk=pk, finished_at__isnull=False).exists()


def _until(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.01)


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def _next_id() -> int:
    from django.db.models import Max

    from steady_queue.models import Job

    return (Job.objects.aggregate(top=Max("pk"))["top"] or 0) + 1


def _disk(label: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        size = cursor.fetchone()[0]
    print(f"disk ({label}): database {size}, {_free()} free on /work", flush=True)


def _free() -> str:
    return f"{shutil.disk_usage('/work').free / 2**30:.1f} GB"


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
    parser.add_argument("--name", default="sq_history_big")
    parser.add_argument("--small", type=int, default=1_000, help="finished jobs, first")
    parser.add_argument("--big", type=int, default=100_000_000, help="finished jobs, then")
    parser.add_argument("--prune-day", type=int, default=5_000_000, help="jobs finished a day")
    parser.add_argument(
        "--pruned",
        type=int,
        default=0,
        help="oldest rows pruned, plain and partitioned (default: --prune-day, one day)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="drain rounds (median)")
    parser.add_argument("--requests", type=int, default=20, help="requests per page (p95)")
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
