"""PostgreSQL's storage prepares its statements, unless the project says not to.

Behind PgBouncer in transaction mode a prepared statement lives on one server
connection and the next transaction may get another: psycopg's documented setting
for that is ``OPTIONS["prepare_threshold"] = None``, which the storage respects.
"""

from __future__ import annotations

import os

import pytest
from django.db import connection

from steady_queue import storage
from steady_queue.models import Job, Process
from tests import tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"
    ),
]


def drain_one_job() -> None:
    from steady_queue.runner.perform import perform

    tasks.add.enqueue(1, 2)
    process = Process.register(kind=Process.Kind.WORKER, name="prepared", pid=os.getpid())
    for claimed in storage.claim(["*"], 1, process):
        perform(claimed)
    assert Job.objects.filter(finished_at__isnull=False).count() == 1


def prepared_statements() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        return cursor.fetchone()[0]


@pytest.fixture
def fresh_connection():
    connection.close()  # a new session: no statements prepared before the test
    yield
    connection.close()


def test_claim_and_finish_are_prepared_by_default(fresh_connection):
    drain_one_job()
    assert prepared_statements() >= 2


def test_an_explicit_prepare_threshold_of_none_prepares_nothing(fresh_connection, monkeypatch):
    options = {**connection.settings_dict.get("OPTIONS", {}), "prepare_threshold": None}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    connection.close()

    drain_one_job()

    assert prepared_statements() == 0
