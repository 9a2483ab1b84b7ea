from __future__ import annotations

import pytest

from steady_queue import recurring_task
from tests.features import tasks


@pytest.fixture(autouse=True)
def _reset_runs():
    tasks.RUNS.clear()
    yield
    tasks.RUNS.clear()


@pytest.fixture
def declared(monkeypatch):
    """Start each test with no @recurring declarations; restore them afterwards."""
    monkeypatch.setattr(recurring_task, "_declared", [])
    return recurring_task._declared


# The process tests' fixtures: start the real ``manage.py steady_queue`` and watch it.
from tests.processes.conftest import hooks_log, run_log, start_supervisor  # noqa: E402, F401
