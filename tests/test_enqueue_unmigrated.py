"""Enqueueing into a queue database whose migrations were not run (issue 25, item 17):
the error says to run ``manage.py migrate``, and is still the database's error type."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import DatabaseError, OperationalError, ProgrammingError, connections

import steady_queue
from steady_queue.preflight import TablesMissing, missing_table_error, tables_problem
from tests import tasks
from tests.empty_database import ALIAS, empty_database

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def unmigrated(transactional_db, tmp_path: Path):
    with empty_database(tmp_path):
        # The test case guards against new connections to aliases it was not told of;
        # one opened here (not through the guarded ensure_connection) is let through.
        connections[ALIAS].connect()
        previous, steady_queue.database = steady_queue.database, ALIAS
        try:
            yield ALIAS
        finally:
            steady_queue.database = previous


def test_enqueue_into_missing_tables_says_to_run_migrate(unmigrated):
    with pytest.raises(TablesMissing) as raised:
        tasks.greet.enqueue("World")

    assert "run manage.py migrate" in str(raised.value)
    assert f"database {unmigrated!r}" in str(raised.value)
    # The database's own error type still catches it: existing handlers keep working.
    native = OperationalError if connections[unmigrated].vendor == "sqlite" else ProgrammingError
    assert isinstance(raised.value, native)
    assert isinstance(raised.value, DatabaseError)
    assert isinstance(raised.value.__cause__, native)


def test_tables_problem_names_the_missing_tables_and_the_database(unmigrated):
    problem = tables_problem(unmigrated)

    assert "steady_queue_jobs" in problem
    assert "run manage.py migrate" in problem
    assert tables_problem("default") is None


def test_other_database_errors_are_left_as_they_are():
    with pytest.raises(DatabaseError) as raised, connections["default"].cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table_of_ours")

    assert missing_table_error(raised.value, "default") is None
