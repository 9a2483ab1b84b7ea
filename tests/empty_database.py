"""A database with none of Steady Queue's tables, as before ``manage.py migrate``.

SQLite: a new file. PostgreSQL and MySQL: a database created on the test server and
dropped afterwards. Registered as the alias "empty" for in-process queries; its name is
also given, for a subprocess's settings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connections

ALIAS = "empty"


@contextmanager
def empty_database(directory: Path) -> Iterator[str]:
    """Create an empty database, declare it as alias "empty"; yield its NAME."""
    default = connections["default"]
    if default.vendor == "sqlite":
        name = str(directory / "empty.sqlite3")
    else:
        name = f"{default.settings_dict['NAME']}_empty_{os.getpid()}"
        _server_statement(f"CREATE DATABASE {default.ops.quote_name(name)}")
    connections.settings[ALIAS] = {**default.settings_dict, "NAME": name}
    try:
        yield name
    finally:
        if ALIAS in connections:
            connections[ALIAS].close()
            del connections[ALIAS]
        del connections.settings[ALIAS]
        if default.vendor != "sqlite":
            _server_statement(f"DROP DATABASE IF EXISTS {default.ops.quote_name(name)}")


def _server_statement(sql: str) -> None:
    # CREATE and DROP DATABASE run outside a transaction: on a connection of their own.
    connection = connections.create_connection("default")
    try:
        connection.set_autocommit(True)
        with connection.cursor() as cursor:
            cursor.execute(sql)
    finally:
        connection.close()
