"""Create the benchmark database from scratch and fill tables quickly."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from django.core.management import call_command


def prepare(db: str, name: str) -> None:
    """Point the benchmark's settings at ``db`` and database ``name``, create it afresh,
    set Django up and migrate: the start of every benchmark script."""
    os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = db, name
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    recreate()
    import django

    django.setup()
    migrate()


def recreate() -> None:
    """Drop and create the benchmark database (before Django is set up)."""
    db, name = os.environ["SQ_BENCH_DB"], os.environ.get("SQ_BENCH_NAME", "sq_bench")
    if db == "postgres":
        with postgres_server() as postgres:
            postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            postgres.execute(f'CREATE DATABASE "{name}"')
    elif db == "mysql":
        import MySQLdb

        connection = MySQLdb.connect(
            host=os.environ.get("SQ_MYSQL_HOST", "127.0.0.1"),
            port=int(os.environ.get("SQ_MYSQL_PORT", "3306")),
            user=os.environ.get("SQ_MYSQL_USER", "root"),
            passwd="",
        )
        cursor = connection.cursor()
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        connection.close()
    else:
        path = Path(os.environ.get("SQ_BENCH_DIR", "/tmp")) / f"{name}.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


@contextlib.contextmanager
def scratch_postgres(name: str, *, settings: str, set_up: bool = True, keep: bool = False):
    """A PostgreSQL benchmark database ``name`` created afresh for the block (Django set
    up and migrated unless ``set_up`` is False) and dropped after it, unless ``keep``."""
    os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = "postgres", name
    os.environ["DJANGO_SETTINGS_MODULE"] = settings
    recreate()
    try:
        if set_up:
            import django

            django.setup()
            migrate()
        yield
    finally:
        if not keep:
            from django.db import connections

            connections.close_all()
            with postgres_server() as server:
                server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            print(f"dropped database {name}", flush=True)


def postgres_server():
    """A connection to the PostgreSQL server's maintenance database, to create and drop."""
    import psycopg

    server = {
        "host": os.environ.get("SQ_PG_HOST", "127.0.0.1"),
        "port": os.environ.get("SQ_PG_PORT", "5432"),
        "user": os.environ.get("SQ_PG_USER", "postgres"),
    }
    return psycopg.connect(**server, dbname="postgres", autocommit=True)


def migrate() -> None:
    call_command("migrate", verbosity=0, interactive=False)


def truncate(*, keep_jobs: bool = False) -> None:
    """Empty every queue table of every backend; with ``keep_jobs``, all but our jobs.

    Kept, the jobs table is vacuumed and analyzed, as autovacuum would (this test
    server may run without it): each run starts from the same state.
    """
    from django.apps import apps
    from django.db import connection

    models = [*apps.get_app_config("steady_queue").get_models()]
    models += [*apps.get_app_config("django_tasks_database").get_models()]
    if apps.is_installed("dj_queue"):
        models += [m for m in apps.get_app_config("dj_queue").get_models() if m._meta.managed]
    if keep_jobs:
        models = [model for model in models if model._meta.db_table != "steady_queue_jobs"]
    with connection.cursor() as cursor:
        if keep_jobs and connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE steady_queue_jobs")
        for model in models:
            table = connection.ops.quote_name(model._meta.db_table)
            if connection.vendor == "sqlite":
                cursor.execute("PRAGMA foreign_keys = OFF")
                cursor.execute(f"DELETE FROM {table}")
                cursor.execute("PRAGMA foreign_keys = ON")
            elif connection.vendor == "mysql":
                cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
                cursor.execute(f"TRUNCATE TABLE {table}")
                cursor.execute("SET FOREIGN_KEY_CHECKS = 1")
            else:
                cursor.execute(f"TRUNCATE TABLE {table} CASCADE")
        if connection.vendor == "postgresql":
            _checkpoint(cursor)


def _checkpoint(cursor) -> None:
    """Start every run right after a checkpoint, so that none falls in the middle of one."""
    from django.db import DatabaseError

    # Needs a superuser (or pg_checkpoint); without, the runs go on as they are.
    with contextlib.suppress(DatabaseError):
        cursor.execute("CHECKPOINT")


def preload_finished(count: int) -> None:
    """Insert ``count`` finished jobs, like real ones, in one statement (any database)."""
    from django.db import connection
    from django.utils import timezone

    now = connection.ops.adapt_datetimefield_value(timezone.now())
    attempt = (
        '[{"worker_id": "worker-0123456789ab", "started_at": "2025-01-01T00:00:00+00:00", '
        '"finished_at": "2025-01-01T00:00:00.001000+00:00", "error": null}]'
    )
    columns = (
        "queue_name, task_path, backend, arguments, priority, concurrency_key, attempts, "
        "created_at, updated_at, finished_at"
    )
    values = "'default', 'bench.tasks.noop', 'default', %s, 0, '', %s, %s, %s, %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO steady_queue_jobs ({columns}) SELECT {values} FROM {_numbers(count)}",
            ['{"args": [], "kwargs": {}}', attempt, now, now, now],
        )
        # Settle the table as it would be after a long life: vacuumed and analyzed, and
        # the million rows' writes checkpointed, not left for the drain to pay for.
        for statement in SETTLE[connection.vendor]:
            cursor.execute(statement)


SETTLE = {
    "postgresql": ["VACUUM ANALYZE steady_queue_jobs", "CHECKPOINT"],
    "mysql": ["ANALYZE TABLE steady_queue_jobs"],
    "sqlite": ["ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"],
}


def _numbers(count: int) -> str:
    """FROM clause of ``count`` rows: a cross join of digit tables, filtered."""
    places = max(1, len(str(max(count - 1, 1))))
    digits = " UNION ALL ".join(f"SELECT {digit} AS n" for digit in range(10))
    tables = ", ".join(f"({digits}) d{place}" for place in range(places))
    number = " + ".join(f"d{place}.n * {10**place}" for place in range(places))
    return f"{tables} WHERE {number} < {count}"
