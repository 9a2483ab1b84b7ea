"""SQLite's write transactions (storage/sqlite.py write_transaction): begun on a cursor,
joined by the blocks inside them, rolled back whole on a failure."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from steady_queue.models import Pause
from steady_queue.storage.sqlite.transaction import write_transaction

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's storage"),
]


def pause(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO steady_queue_pauses (queue_name, created_at) VALUES (%s, %s)",
            [name, "2030-01-01 00:00:00"],
        )


def test_a_block_inside_joins_the_transaction_and_a_failure_rolls_both_back():
    with (
        CaptureQueriesContext(connection) as queries,
        pytest.raises(ValueError),
        write_transaction(),
    ):
        pause("outer")
        with write_transaction():
            pause("inner")
        raise ValueError("no")

    assert not Pause.objects.exists()
    sent = [query["sql"] for query in queries.captured_queries]
    assert sent[0] == "BEGIN IMMEDIATE" and sent[-1] == "ROLLBACK"
    assert not connection.connection.in_transaction and connection.get_autocommit()


def test_it_commits_once_at_the_end():
    with CaptureQueriesContext(connection) as queries, write_transaction():
        pause("one")
        with write_transaction():
            pause("two")

    assert sorted(Pause.objects.values_list("queue_name", flat=True)) == ["one", "two"]
    sent = [query["sql"].split()[0] for query in queries.captured_queries]
    assert sent == ["BEGIN", "INSERT", "INSERT", "COMMIT"]


def test_orm_writes_take_djangos_transaction_and_cannot_nest_in_a_cursors():
    with write_transaction(orm_writes=True):
        assert connection.in_atomic_block
        Pause.objects.create(queue_name="orm")
    assert Pause.objects.filter(queue_name="orm").exists()

    with pytest.raises(RuntimeError), write_transaction(), write_transaction(orm_writes=True):
        pass


def test_inside_a_callers_transaction_it_is_a_savepoint():
    with transaction.atomic():
        pause("kept")
        with pytest.raises(ValueError), write_transaction():
            pause("undone")
            raise ValueError("no")

    assert list(Pause.objects.values_list("queue_name", flat=True)) == ["kept"]
