"""Shared helpers of the encryption tests: the keys, and what a table holds as stored."""

from __future__ import annotations

import pytest
from django.db import connection

import steady_queue
from steady_queue.runner import run_logs
from tests.tasks import encrypted as tasks

#: The key of tests/settings.py, and two more for rotation.
KEY = "eRmLD2hdp0B-Bp6UrXNkyz3RSmpp7g9nFYeFNF06cFk="
NEW_KEY = "sr1n1ZO10Pnev5olzZ1slWVk_7m3Flkfu8NmMdGHqQA="
OTHER_KEY = "ikO-l_JJ6u48CZ9k-G2XtfdLhv_m8Wzz9IoWV7lrMN0="

CARD = "4111-1111-1111-1111"


def raw_rows(table: str, where: str, params: list) -> str:
    """Every column of the rows of ``table`` matching ``where``, as the database stores them."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)} WHERE {where}", params)
        return repr(cursor.fetchall())


@pytest.fixture(autouse=True)
def forget_seen():
    tasks.SEEN.clear()
    yield
    tasks.SEEN.clear()


@pytest.fixture
def capturing(monkeypatch):
    """Keep the running jobs' logs, as a worker does (and their prints)."""
    monkeypatch.setattr(steady_queue, "job_log_print", True)
    run_logs.install()
    yield
    run_logs.uninstall()
