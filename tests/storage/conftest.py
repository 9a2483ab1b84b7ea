"""Contract tests: every storage that runs on this database passes the same tests.

The portable ORM storage runs everywhere; a database's fast storage (PostgreSQL's,
MySQL/MariaDB's, SQLite's) runs beside it on that database. Adding a fast path for another database
adds a parameter here, not a suite.
"""

from __future__ import annotations

import os

import pytest
from django.db import connections

from steady_queue import storage
from steady_queue.models import Process
from steady_queue.storage.base import Storage


def pytest_generate_tests(metafunc):
    if "store" in metafunc.fixturenames:
        names = [type(each).__name__ for each in storage.implementations("default")]
        metafunc.parametrize("store", names, indirect=True)


@pytest.fixture
def store(request):
    """The storage named by the parameter, made the queue database's for the test."""
    (chosen,) = [s for s in storage.implementations() if type(s).__name__ == request.param]
    with storage.using(chosen):
        yield chosen


@pytest.fixture
def process(db):
    return Process.register(kind=Process.Kind.WORKER, name="contract", pid=os.getpid())


def vendor() -> str:
    return connections["default"].vendor


@pytest.fixture
def fast():
    """The database's own fast storage, made the queue database's for the test."""
    (chosen,) = [each for each in storage.implementations() if type(each) is not Storage]
    with storage.using(chosen):
        yield chosen


@pytest.fixture
def worker_process(db) -> Process:
    return Process.register(kind=Process.Kind.WORKER, name="worker", pid=os.getpid())
