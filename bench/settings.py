"""Settings for the benchmark: Steady Queue, django-tasks-db and dj-queue in one database.

``SQ_BENCH_DB`` picks sqlite, postgres or mysql. Connection settings stay Django's
defaults (no persistent connections, no pool), as in the issue's measurements, except
in the processes started with ``SQ_BENCH_CONN_MAX_AGE`` (dj-queue's throughput
configuration, which its documentation recommends persistent connections for).
dj-queue is left out where it is not installed (it needs Django 6).
"""

import importlib.util
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "steady-queue-bench"
USE_TZ = True
TIME_ZONE = "UTC"
DEBUG = False

DB = os.environ.get("SQ_BENCH_DB", "sqlite")
NAME = os.environ.get("SQ_BENCH_NAME", "sq_bench")

DATABASES = {
    "default": {
        "postgres": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": NAME,
            "USER": os.environ.get("SQ_PG_USER", "postgres"),
            "HOST": os.environ.get("SQ_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("SQ_PG_PORT", "5432"),
        },
        "mysql": {
            "ENGINE": "django.db.backends.mysql",
            "NAME": NAME,
            "USER": os.environ.get("SQ_MYSQL_USER", "root"),
            "HOST": os.environ.get("SQ_MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("SQ_MYSQL_PORT", "3306"),
            "OPTIONS": {"charset": "utf8mb4", "isolation_level": "read committed"},
        },
        "sqlite": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(Path(os.environ.get("SQ_BENCH_DIR", "/tmp")) / f"{NAME}.sqlite3"),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        },
    }[DB]
}
if CONN_MAX_AGE := os.environ.get("SQ_BENCH_CONN_MAX_AGE"):
    DATABASES["default"]["CONN_MAX_AGE"] = int(CONN_MAX_AGE)

DJ_QUEUE = importlib.util.find_spec("dj_queue") is not None

# bench/scale.py --pgbouncer: the worker processes go through PgBouncer (transaction
# pooling) on this port and LISTEN on a direct connection (docs/explanation/scaling.md,
# "Behind PgBouncer").
if DB == "postgres" and (PGBOUNCER_PORT := os.environ.get("SQ_BENCH_PGBOUNCER_PORT")):
    import steady_queue

    DATABASES["direct"] = dict(DATABASES["default"])
    DATABASES["default"] = {
        **DATABASES["default"],
        "PORT": PGBOUNCER_PORT,
        "OPTIONS": {"prepare_threshold": None},
        "DISABLE_SERVER_SIDE_CURSORS": True,
    }
    steady_queue.listen_database = "direct"

# bench/throttled.py: the processes it starts count their statements (bench/statements.py).
if COUNT_PORT := os.environ.get("SQ_BENCH_COUNT_PORT"):
    from bench import statements

    statements.send_to(int(COUNT_PORT))

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "steady_queue",
    "django_tasks_db",
    *(["dj_queue"] if DJ_QUEUE else []),
    "bench",
]
try:
    import django.tasks  # noqa: F401
except ImportError:
    INSTALLED_APPS.append("django_tasks")

TASKS = {
    "default": {"BACKEND": "steady_queue.backend.SteadyQueueBackend"},
    "dtdb": {"BACKEND": "django_tasks_db.DatabaseBackend"},
}
if DJ_QUEUE:
    # Its defaults; its throughput configuration is bench/dj_queue_throughput.toml.
    # (Without its router: with one database there is nothing to route, and the router
    # reads the options of a "default" alias, which is Steady Queue's here.)
    TASKS["djq"] = {"BACKEND": "dj_queue.backend.DjQueueBackend", "QUEUES": [], "OPTIONS": {}}

# Quiet: one log line per job would be measured too. Errors still show.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler", "level": "ERROR"}},
    "loggers": {
        name: {"handlers": ["stderr"], "level": "ERROR", "propagate": False}
        for name in ("steady_queue", "django.tasks", "django_tasks", "django_tasks_db", "dj_queue")
    },
}
