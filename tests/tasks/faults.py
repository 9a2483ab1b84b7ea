"""Tasks run by the real workers of the fault suite.

Each run writes ``start`` and ``end`` rows to the *record*: an SQLite file of the test's
own (``$SQ_FAULTS_RECORD``), opened by the task through its own connection and committed
at once. It is independent of the queue's database, which the suite disturbs, and of
what the engine says about its jobs: the checks compare the two.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy
from steady_queue.task_options.timeouts import timeout

# Built inside the task: as arguments, PostgreSQL would refuse them at enqueue already.
UNSTORABLE = {"nul": "nul \x00 byte", "surrogate": "file-\udcff.txt"}  # os.fsdecode(b"\xff")


def record(label: str, event: str, key: str = "", at: float | None = None) -> None:
    """One event of a run; ``at``: when it happened, if not now (the moment a receiver was
    called, taken before opening the record: a process stopped while it opens the file
    would otherwise date the event to its resumption)."""
    at = time.time() if at is None else at
    connection = sqlite3.connect(os.environ["SQ_FAULTS_RECORD"], timeout=60)
    try:
        with connection:
            connection.execute(
                "INSERT INTO runs (label, event, pid, thread, at, key) VALUES (?, ?, ?, ?, ?, ?)",
                (label, event, os.getpid(), threading.get_ident(), at, key),
            )
    finally:
        connection.close()


def _run(label: str, seconds: float, key: str = "") -> str:
    record(label, "start", key)
    time.sleep(seconds)
    record(label, "end", key)
    return label


def _write_while_running(label: str, seconds: float) -> str:
    """A run that writes to the queue's database all along: a restart cuts its writes.

    A temporary table of its connection's own: real writes (a statement and a commit
    each) that no other run waits for. A run whose write fails raises, as a task does.
    """
    from django.db import connection

    record(label, "start")
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE IF NOT EXISTS fault_writes (label VARCHAR(100))")
        while True:
            cursor.execute("INSERT INTO fault_writes (label) VALUES (%s)", [label])
            if time.monotonic() >= deadline:
                break
            time.sleep(0.005)
    record(label, "end")
    return label


@task()
def writes_at_most_once(label: str, seconds: float) -> str:
    """The default retry policy: a run whose write failed fails for good."""
    return _write_while_running(label, seconds)


@retry_policy(attempts=10, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def writes_at_least_once(label: str, seconds: float) -> str:
    """Its retry policy runs it again after a write the restart cut."""
    return _write_while_running(label, seconds)


@task()
def at_most_once(label: str, seconds: float) -> str:
    """The default retry policy: a job whose worker died is failed, never re-run."""
    return _run(label, seconds)


@retry_policy(attempts=10, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def at_least_once(label: str, seconds: float) -> str:
    return _run(label, seconds)


@limits_concurrency(key=lambda label, key, seconds: key, to=2)
@task()
def limited(label: str, key: str, seconds: float) -> str:
    return _run(label, seconds, key)


@task()
def returns_unstorable(label: str, kind: str) -> str:
    _run(label, 0)
    return UNSTORABLE[kind]


@task()
def raises_unstorable(label: str, kind: str) -> None:
    _run(label, 0)
    raise ValueError(UNSTORABLE[kind])


@task()
async def cancelled(label: str) -> None:
    _run(label, 0)
    raise asyncio.CancelledError("cancelled inside the task")


class Abort(BaseException):
    """Neither an Exception nor SystemExit."""


@task()
def raises_base_exception(label: str) -> None:
    _run(label, 0)
    raise Abort("a BaseException from the task")


@task()
def behind_a_raising_receiver(label: str) -> str:
    """Its ``task_started`` receiver (tests/faults/settings.py) raises before it runs."""
    return _run(label, 0)


@retry_policy(attempts=2, base_delay=timedelta(0), jitter=0)
@limits_concurrency(key=lambda label, key, stuck: key, to=1)
@timeout(timedelta(seconds=0.3))
@task()
def swallows_its_timeout(label: str, key: str, stuck: bool) -> None:
    """Catches every Exception in a loop that writes, for 2 s, past its 0.3 s timeout.

    ``stuck``: each round sleeps in a C call past the deadline first, so that its worker
    gives the thread up before the call returns. Its writes and its ``end`` (written on
    the way out, however the run stops) show how long it really held its slot.
    """
    record(label, "start", key)
    deadline = time.monotonic() + 2.0
    try:
        while time.monotonic() < deadline:
            try:
                time.sleep(0.8 if stuck else 0.005)
                record(label, "write", key)
            except Exception:
                pass
    finally:
        record(label, "end", key)
