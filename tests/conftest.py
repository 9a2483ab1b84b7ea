from __future__ import annotations

import pytest
from django.db import DatabaseError, connections

from steady_queue.models.task_rollup import tally
from steady_queue.storage.postgres.claim_cursor import CURSORS
from steady_queue.task_options import TaskOptions, fairness, recurring_task
from tests import fast_flush, tasks
from tests.tasks import fair as fair_tasks
from tests.tasks import features

fast_flush.install()


@pytest.fixture(autouse=True)
def _reset_calls():
    tasks.CALLS.clear()
    features.RUNS.clear()
    tally.reset()  # what an earlier test ran without flushing is not this test's
    CURSORS.reset()  # nor are the jobs an earlier test claimed (PostgreSQL's claim cursor)
    yield
    tasks.CALLS.clear()
    features.RUNS.clear()


@pytest.fixture(scope="session", autouse=True)
def _second_queue_database_checked(django_db_setup, django_db_blocker):
    """Ask the "billing" alias once what Django's system checks ask every alias.

    ``manage.py check`` runs the JSONField check against every database in DATABASES,
    which queries SQLite and MySQL, and on MySQL each field's column type, which asks the
    server's version; cached here as it is for "default" during set-up, tests that run
    the checks need no access to the second queue database.
    """
    second = connections["billing"]

    def ask() -> None:
        assert second.features.supports_json_field and second.data_types

    with django_db_blocker.unblock():
        try:
            ask()
        except DatabaseError:  # not set up in this session: any test database will do
            second.settings_dict["NAME"] = connections["default"].settings_dict["NAME"]
            second.close()
            ask()
        second.close()


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


@pytest.fixture(autouse=True)
def _no_task_paused_hint(monkeypatch):
    """Start each test knowing no task is paused, without the hint's query.

    An enqueue or a run reads the paused tasks at most twice a second (``TaskPause.seems_paused``);
    that read landing inside a test's counted queries would depend on timing. Pausing
    or resuming in a test reads them again (``forget_hint``); tests/test_pauses.py
    tests the hint itself.
    """
    import time

    from django.conf import settings

    from steady_queue.models import task_pause

    monkeypatch.setattr(task_pause, "HINT_SECONDS", float("inf"))
    for alias in settings.DATABASES:
        task_pause._hint._read[alias] = (time.monotonic(), frozenset())
    yield
    task_pause._hint.clear()


#: The @fair declarations of tests/tasks/fair.py, made as it was imported above.
FAIR_DECLARED = fairness._registry


@pytest.fixture(autouse=True)
def _no_fair_tasks(monkeypatch):
    """Start each test with no ``@fair`` task in use: the FIFO path, its statement counts.

    Importing a fair task anywhere in the session would otherwise switch every later
    test's enqueue to the tagged path (``fairness.in_use``). Tests of fair share ask for
    ``fair_share``, which brings the declarations back.
    """
    monkeypatch.setattr(fairness, "_registry", TaskOptions())


@pytest.fixture
def fair_share(monkeypatch):
    """The ``@fair`` tasks of tests/tasks/fair.py, in use in this test."""
    monkeypatch.setattr(fairness, "_registry", FAIR_DECLARED)
    return fair_tasks
