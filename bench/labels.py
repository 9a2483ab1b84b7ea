"""How fast does ``Job.objects.labelled()`` answer over a big jobs table?

    python bench/labels.py                            # PostgreSQL, 1,000,000 jobs
    python bench/labels.py --db mysql --jobs 1000000
    python bench/labels.py --db sqlite --jobs 1000000

The database (``--name``, default sq_bench_labels) is dropped, created, migrated and
filled in SQL (a few INSERT ... SELECT over a generated series, not enqueued one by
one) with ``--jobs`` finished jobs whose labels follow from their id ``i``:

- ``tenant:<i % 1000>``: 1,000 tenants, ``jobs / 1000`` jobs each;
- ``kind:<i % 10>``: 10 kinds, a tenth of the jobs each;
- ``import-<i // 5000>``: imports of 5,000 jobs;
- ``billing`` on 3 jobs in 10.

Then, for each filter, the median of ``--repeat`` runs of its first page (the 50
newest jobs: ``ORDER BY id DESC LIMIT 50``, loaded as Job objects, as a list page
does), of its count, and of its count capped at 10,001 (``[:10001].count()``, what a
list shows as "10,000+"). ``--reuse`` measures the database of an earlier run again
without filling it. The filters: ``all`` of two common labels, ``all`` of two
selective labels (a handful of jobs), ``any`` of three tenants, ``any`` of two kinds.
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

# name -> (all, any): the filters measured.
FILTERS = {
    "all: 2 common (kind:2, billing)": (["kind:2", "billing"], []),
    "all: 2 selective (tenant:42, import-17)": (["tenant:42", "import-17"], []),
    "all: tenant + kind (tenant:7, kind:7)": (["tenant:7", "kind:7"], []),
    "any: 3 tenants": ([], ["tenant:1", "tenant:2", "tenant:3"]),
    "any: 2 kinds": ([], ["kind:1", "kind:2"]),
    "all + any (billing; tenant:1 or tenant:5)": (["billing"], ["tenant:1", "tenant:5"]),
}


def main() -> int:
    options = _parse_args()
    os.environ["SQ_BENCH_DIR"] = os.environ.get("SQ_BENCH_DIR", "/tmp")
    from bench import database

    if options.reuse:  # the tables of an earlier run, as they are
        os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = options.db, options.name
        os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
        import django

        django.setup()
    else:
        database.prepare(options.db, options.name)
    from django.db import connection

    started = time.monotonic()
    if not options.reuse:
        _fill(connection.vendor, options.jobs)
    filled = time.monotonic() - started
    from steady_queue.models import Job, JobLabel

    print(
        f"{connection.vendor}: {Job.objects.count():,} jobs, {JobLabel.objects.count():,} "
        f"label rows, filled in {filled:.1f} s"
    )
    print(f"\n{'filter':<45} {'matches':>9} {'page ms':>9} {'count ms':>9} {'≤10k ms':>9}")
    for name, (every, some) in FILTERS.items():
        queryset = Job.objects.labelled(all=every, any=some)
        page = _median(options.repeat, lambda q=queryset: list(q.order_by("-pk")[:50]))
        count = _median(options.repeat, queryset.count)
        # A count that stops at 10,001: what a list shows as "10,000+".
        capped = _median(options.repeat, lambda q=queryset: q[:CAP].count())
        matches = queryset.count()
        print(f"{name:<45} {matches:>9,} {page:>9.1f} {count:>9.1f} {capped:>9.1f}")
    if options.explain:
        every, some = FILTERS["all: 2 selective (tenant:42, import-17)"]
        print(Job.objects.labelled(all=every, any=some).order_by("-pk")[:50].explain())
    return 0


CAP = 10_001


def _median(repeat: int, work) -> float:
    work()  # warm: the first run reads the pages from disk
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _fill(vendor: str, jobs: int) -> None:
    """The jobs, then their label rows, in a few statements; then the tables analyzed."""
    from django.db import connection

    series, concat, json_array = {
        "postgresql": (
            f"(SELECT g AS i FROM generate_series(1, {jobs}) g) s",
            lambda *parts: " || ".join(parts),
            "jsonb_build_array",
        ),
        "mysql": (
            f"(SELECT seq AS i FROM seq_1_to_{jobs}) s",
            lambda *parts: f"CONCAT({', '.join(parts)})",
            "JSON_ARRAY",
        ),
        "sqlite": (
            f"(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {jobs}) "
            "SELECT i FROM n) s",
            lambda *parts: " || ".join(parts),
            "json_array",
        ),
    }[vendor]
    division = "DIV" if vendor == "mysql" else "/"
    labels = {
        "tenant": concat("'tenant:'", "CAST(i % 1000 AS CHAR)")
        if vendor == "mysql"
        else concat("'tenant:'", "CAST(i % 1000 AS TEXT)"),
        "kind": concat("'kind:'", "CAST(i % 10 AS CHAR)")
        if vendor == "mysql"
        else concat("'kind:'", "CAST(i % 10 AS TEXT)"),
        "import": concat("'import-'", f"CAST(i {division} 5000 AS CHAR)")
        if vendor == "mysql"
        else concat("'import-'", f"CAST(i {division} 5000 AS TEXT)"),
    }
    now = "CURRENT_TIMESTAMP"
    array = (
        f"CASE WHEN i % 10 < 3 THEN {json_array}({labels['tenant']}, {labels['kind']}, "
        f"{labels['import']}, 'billing') ELSE {json_array}({labels['tenant']}, "
        f"{labels['kind']}, {labels['import']}) END"
    )
    statements = [
        "INSERT INTO steady_queue_jobs (id, queue_name, task_path, backend, arguments, "
        "priority, finished_at, concurrency_key, attempts, labels, created_at, updated_at) "
        f"SELECT i, 'default', 'bench.tasks.noop', 'default', '{{}}', 0, {now}, '', '[]', "
        f"{array}, {now}, {now} FROM {series}",
        *(
            f"INSERT INTO steady_queue_job_labels (label, job_id) SELECT {label}, i FROM {series}"
            for label in labels.values()
        ),
        "INSERT INTO steady_queue_job_labels (label, job_id) "
        f"SELECT 'billing', i FROM {series} WHERE i % 10 < 3",
    ]
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
        if vendor == "postgresql":
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('steady_queue_jobs', 'id'), %s)", [jobs]
            )
            cursor.execute("VACUUM ANALYZE steady_queue_jobs")
            cursor.execute("VACUUM ANALYZE steady_queue_job_labels")
        elif vendor == "mysql":
            cursor.execute("ANALYZE TABLE steady_queue_jobs, steady_queue_job_labels")
        else:
            cursor.execute("ANALYZE")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["postgres", "mysql", "sqlite"], default="postgres")
    parser.add_argument("--name", default="sq_bench_labels")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--explain", action="store_true", help="print the plan of one page")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the database of an earlier run, unfilled"
    )
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
