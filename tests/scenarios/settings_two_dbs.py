"""Settings with the queue tables in their own SQLite database (see test_two_databases)."""

import os
from pathlib import Path

import steady_queue
from tests.settings import *  # noqa: F403

DIRECTORY = Path(os.environ["SQ_TWO_DBS_DIR"])
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL;",
}

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(DIRECTORY / "app.sqlite3"),
        "OPTIONS": SQLITE_OPTIONS,
    },
    "queue": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(DIRECTORY / "queue.sqlite3"),
        "OPTIONS": SQLITE_OPTIONS,
    },
}
DATABASE_ROUTERS = ["steady_queue.routers.SteadyQueueRouter"]
steady_queue.database = "queue"
# The suite's "billing" backend has a database of its own, which this project has not.
TASKS = {alias: config for alias, config in TASKS.items() if alias != "billing"}  # noqa: F405
