"""partition_finished_by on every database: checked, and ignored off PostgreSQL, where
finished jobs keep their batch deletes and no history table exists."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import steady_queue
from steady_queue.checks.retention import (
    HISTORY_ERROR_ID,
    HISTORY_IGNORED_ID,
    check_finished_history,
)
from steady_queue.compat import TaskResultDoesNotExist, default_task_backend
from steady_queue.models import FinishedHistory
from steady_queue.models import prune_tally as kinds
from steady_queue.retention import history
from steady_queue.retention.pruning import prune
from tests.retention.helpers import alive, finished

DAY = timedelta(days=1)
POSTGRES = connection.vendor == "postgresql"


def test_the_default_is_none_and_checks_nothing():
    assert steady_queue.partition_finished_by is None
    assert check_finished_history() == []


def test_an_unknown_value_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(steady_queue, "partition_finished_by", "week")
    [error] = check_finished_history()
    assert error.id == HISTORY_ERROR_ID and "'week'" in error.msg


def test_day_is_a_warning_off_postgresql(monkeypatch):
    monkeypatch.setattr(steady_queue, "partition_finished_by", "day")
    found = check_finished_history()
    if POSTGRES:
        assert found == []
    else:
        [warning] = found
        assert warning.id == HISTORY_IGNORED_ID and connection.display_name in warning.msg


@pytest.mark.skipif(POSTGRES, reason="PostgreSQL moves them (test_partitioned.py)")
@pytest.mark.django_db
def test_off_postgresql_the_setting_is_ignored_and_batch_deletes_go_on(monkeypatch):
    monkeypatch.setattr(steady_queue, "partition_finished_by", "day")
    monkeypatch.setattr(steady_queue, "history_after", timedelta(minutes=5))
    assert not history.enabled()
    recent, old = finished(timedelta(hours=1)), finished(2 * DAY)

    removed = prune(pause=0)

    assert alive(recent, old) == {recent}  # the recent one stays, the old one is deleted
    assert not {r.kind for r in removed} & {kinds.HISTORY_MOVES, kinds.HISTORY_PARTITIONS}
    with CaptureQueriesContext(connection) as queries:
        assert FinishedHistory.find(old) is None  # no table to ask
    assert len(queries) == 0
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(str(old))
