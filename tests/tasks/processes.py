"""Tasks run by the real processes in the process tests; they record each run in a file.

A file rather than a table: what a task records must not depend on the database the
test is disturbing, nor roll back with a transaction.
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import timedelta
from pathlib import Path

from steady_queue.compat import task
from steady_queue.task_options.rate_limits import rate_limit
from steady_queue.task_options.retries import retry_policy

HOLD_LIMIT = 60.0


def append(log_path: str, line: str) -> None:
    # One write() on an O_APPEND file: lines from concurrent processes never interleave.
    with open(log_path, "a") as log:
        log.write(f"{line}\n")


@task()
def record(log_path: str, label: str, seconds: float = 0) -> str:
    time.sleep(seconds)
    append(log_path, f"run {label} {os.getpid()}")
    return label


@task()
def hold(log_path: str, label: str, release_path: str) -> str:
    """Run until ``release_path`` exists (or a minute, so that no stray process lingers)."""
    append(log_path, f"start {label} {os.getpid()}")
    deadline = time.monotonic() + HOLD_LIMIT
    while not Path(release_path).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    append(log_path, f"end {label} {os.getpid()}")
    return label


@task()
def remember_connection(log_path: str, label: str) -> None:
    from django.db import connection

    connection.ensure_connection()
    # Django sets close_at when it opens a connection: the same value, the same connection.
    append(log_path, f"run {label}@{connection.close_at} {os.getpid()}")


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def idempotent(log_path: str, label: str) -> None:
    append(log_path, f"run {label} {os.getpid()}")


@rate_limit(to=5, per=timedelta(seconds=1))
@task()
def five_a_second(log_path: str, label: str) -> str:
    """Record when the run started, as the task itself sees it."""
    append(log_path, f"start {label} {time.time()!r}")
    return label


@task()
def timestamp(log_path: str, label: str) -> str:
    append(log_path, f"start {label} {time.time()!r}")
    return label


@task()
def loses_its_connection(log_path: str, label: str) -> None:
    """Its database connection is cut while it writes, as a database restart cuts it."""
    from django.db import connection

    append(log_path, f"run {label} {os.getpid()}")
    cut_own_connection(connection)
    connection.cursor().execute("SELECT 1")  # raises: the connection is gone


def cut_own_connection(connection) -> None:
    if connection.vendor == "postgresql":  # the server ends it: AdminShutdown, as a restart
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    elif connection.vendor == "mysql":  # the server ends it, as a restart does
        with connection.cursor() as cursor:
            cursor.execute("SELECT CONNECTION_ID()")
            (thread_id,) = cursor.fetchone()
            cursor.execute(f"KILL CONNECTION {int(thread_id)}")
    else:  # SQLite has no server to restart: the file's handle goes instead
        connection.ensure_connection()
        connection.connection.close()


@task()
def cut_after_success(log_path: str, label: str) -> str:
    """Succeeds, but its connection is cut as it returns: its success cannot be written."""
    from django.db import DatabaseError, connection

    append(log_path, f"run {label} {os.getpid()}")
    with contextlib.suppress(DatabaseError):  # the statement that cut it fails with it
        cut_own_connection(connection)
    return label
