from __future__ import annotations

import pytest

from steady_queue import recurring_task
from steady_queue.models.task_rollup import tally
from tests import tasks
from tests.tasks import features


@pytest.fixture(autouse=True)
def _reset_calls():
    tasks.CALLS.clear()
    features.RUNS.clear()
    tally.reset()  # what an earlier test ran without flushing is not this test's
    yield
    tasks.CALLS.clear()
    features.RUNS.clear()


@pytest.fixture
def declared(monkeypatch):
    """Start each test with no @recurring declarations; restore them afterwards."""
    monkeypatch.setattr(recurring_task, "_declared", [])
    return recurring_task._declared


def pytest_terminal_summary(terminalreporter) -> None:
    # The dashboard fuzz test records its request count as a property; print it in CI's
    # log too. Properties travel with the report, so this works under pytest-xdist (and
    # it lives here because the controller loads only this conftest).
    for report in terminalreporter.stats.get("passed", []):
        counts = dict(report.user_properties).get("dashboard_fuzz_requests")
        if counts is not None:
            terminalreporter.write_line(f"dashboard fuzz: {counts} requests, 0 answered 500")
