"""A second database alias, "queue", for tests that prove where queries go.

It opens its own connection to the test database (so the tables exist), which makes
every query observable per alias: ``CaptureQueriesContext`` on "default" and on
"queue" shows which one a query took. The two connections hold separate
transactions, so tests using it must be transactional and name both aliases:
``@pytest.mark.django_db(transaction=True, databases=DATABASES)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections
from django.test.utils import CaptureQueriesContext

import steady_queue

ALIAS = "queue"
DATABASES = ["default", ALIAS]


@contextmanager
def queue_alias(name: str = ALIAS) -> Iterator[None]:
    """Declare the alias ``name`` ("queue"), on the test database, for the tests inside.

    Only after the test databases exist (``django_db_setup``) and before a test case
    validates its ``databases``. A test mirror of "default": flushed once, with it.
    """
    default = connections["default"].settings_dict
    # connections.settings is settings.DATABASES: the alias exists for the checks too.
    connections.settings[name] = {**default, "TEST": {**default["TEST"], "MIRROR": "default"}}
    try:
        yield
    finally:
        del connections.settings[name]
        if name in connections:
            connections[name].close()
            del connections[name]


@contextmanager
def queue_database() -> Iterator[str]:
    """Point ``steady_queue.database`` at the "queue" alias."""
    previous = steady_queue.database
    steady_queue.database = ALIAS
    try:
        yield ALIAS
    finally:
        steady_queue.database = previous
        connections[ALIAS].close()
        del connections[ALIAS]


@contextmanager
def captured() -> Iterator[tuple[CaptureQueriesContext, CaptureQueriesContext]]:
    """Capture the queries of both aliases: ``(queue, default)``."""
    with (
        CaptureQueriesContext(connections[ALIAS]) as queue,
        CaptureQueriesContext(connections["default"]) as default,
    ):
        yield queue, default


def sql(context: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in context.captured_queries]
