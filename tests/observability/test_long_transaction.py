"""PostgreSQL: a transaction left open holds back cleanup; health and the overview name it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import steady_queue
from steady_queue.health import horizon

from .conftest import health

postgres = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's MVCC horizon")
THRESHOLD = timedelta(milliseconds=300)


@pytest.fixture
def threshold() -> Iterator[timedelta]:
    previous, steady_queue.long_transaction_threshold = (
        steady_queue.long_transaction_threshold,
        THRESHOLD,
    )
    yield THRESHOLD
    steady_queue.long_transaction_threshold = previous


@pytest.fixture
def second_connection(db) -> Iterator[psycopg.Connection]:
    """Another session on the test database, as a forgotten psql or a report would be."""
    settings = connection.settings_dict
    other = psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        host=settings["HOST"],
        port=settings["PORT"],
        application_name="forgotten report",
    )
    yield other
    other.close()


def fresh() -> None:
    """Forget the pg_stat_activity this test case's transaction read (kept until it ends)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")


def wait_for(condition, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while fresh() or not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


def open_repeatable_read(other: psycopg.Connection) -> int:
    """Begin a REPEATABLE READ transaction that took its snapshot, left idle in it."""
    other.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    other.execute("SELECT count(*) FROM steady_queue_jobs")
    return other.info.backend_pid


@postgres
def test_an_old_open_transaction_is_a_health_problem_until_it_ends(threshold, second_connection):
    assert "long_transaction" not in health().problems()
    pid = open_repeatable_read(second_connection)
    result = wait_for(
        lambda: (found := health()) and "long_transaction" in found.problems() and found,
        "the long_transaction problem",
    )
    line = next(line for line in result.lines if line.startswith("long_transaction"))
    assert f"pid {pid} (forgotten report), idle in transaction, open " in line
    assert "holds back cleanup" in line and "idle_in_transaction_session_timeout" in line
    second_connection.rollback()
    fresh()
    assert "long_transaction" not in health().problems()


@postgres
def test_only_a_transaction_holding_a_snapshot_or_a_write_is_named(threshold, second_connection):
    # READ COMMITTED between statements holds no snapshot: it keeps no dead row.
    second_connection.execute("BEGIN")
    second_connection.execute("SELECT count(*) FROM steady_queue_jobs")
    fresh()
    assert horizon.old_transactions(timedelta(0)) == []
    second_connection.execute("SELECT txid_current()")  # it has written, so it holds
    fresh()
    assert [t.pid for t in horizon.old_transactions(timedelta(0))] == [
        second_connection.info.backend_pid
    ]
    assert horizon.old_transactions(timedelta(hours=1)) == []
    second_connection.rollback()


@postgres
def test_reading_the_horizon_is_one_query_whatever_the_connections(threshold, second_connection):
    open_repeatable_read(second_connection)
    wait_for(lambda: horizon.old_transactions(), "the old transaction")
    with CaptureQueriesContext(connection) as captured:
        found = horizon.old_transactions()
    assert len(captured) == 1 and len(found) <= horizon.MAX_TRANSACTIONS
    second_connection.rollback()


@postgres
def test_the_overview_lists_the_old_transaction(admin_client, threshold, second_connection):
    pid = open_repeatable_read(second_connection)
    wait_for(lambda: horizon.old_transactions(), "the old transaction")
    page = admin_client.get("/jobs/").content.decode()
    assert "holds back cleanup" in page
    assert f"pid {pid} (forgotten report), idle in transaction" in page
    second_connection.rollback()
    fresh()
    assert "holds back cleanup" not in admin_client.get("/jobs/").content.decode()


def test_nothing_is_read_off_postgresql_or_without_threshold(db, django_assert_num_queries):
    previous, steady_queue.long_transaction_threshold = (
        steady_queue.long_transaction_threshold,
        None,
    )
    try:
        with django_assert_num_queries(0):
            assert horizon.old_transactions() == []
    finally:
        steady_queue.long_transaction_threshold = previous
    if connection.vendor != "postgresql":
        with django_assert_num_queries(0):
            assert horizon.old_transactions(timedelta(0)) == []
