"""The storage seam: the hot operations on the queue tables, chosen once per database.

``for_alias()`` returns the storage of the queue database, picked by its vendor the
way Django picks ``connection.features``: PostgreSQL's one-statement paths
(the ``postgres`` package), MySQL/MariaDB's one-round-trip scripts (``mysql``),
SQLite's ``BEGIN IMMEDIATE`` transactions (``sqlite``), or the portable ORM reference
(``base.Storage``) that every other database uses and each of these falls back to for
the uncommon cases.
Only these operations live here: enqueue, claim, finish (and claim the next job with
it), and the wake-ups of idle processes. Every other state change is the models'
(``steady_queue.models``), the same on every database. A finish's steps (the
fallback, the slot's hand-on, threads' finishes grouped) are the base class's
(``finishing``); a fast storage writes only its statements. To add a database's fast
path, add a package beside ``postgres``, subclass Storage there, override what it does
faster, and add it to ``IMPLEMENTATIONS`` (ARCHITECTURE.md walks through it); the
contract tests (tests/storage) then run it too.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from django.db import connections

from .. import db
from . import file_changes
from .base import ClaimNext, Finished, Storage

if TYPE_CHECKING:
    from ..models import ClaimedExecution, Process

__all__ = [
    "ClaimNext",
    "Finished",
    "Storage",
    "claim",
    "database_files",
    "enqueue",
    "for_alias",
    "implementations",
    "using",
]

_chosen: dict[str, Storage] = {}
_lock = threading.Lock()


def _postgres() -> type[Storage]:
    from .postgres import PostgresStorage

    return PostgresStorage


def _sqlite() -> type[Storage]:
    from .sqlite import SqliteStorage

    return SqliteStorage


def _mysql() -> type[Storage]:
    from .mysql import MysqlStorage

    return MysqlStorage


#: The fast storage of each database vendor (a factory, so that psycopg is imported
#: only where it is used); vendors not listed use the portable Storage.
IMPLEMENTATIONS = {"postgresql": _postgres, "sqlite": _sqlite, "mysql": _mysql}


def for_alias(alias: str | None = None) -> Storage:
    """The storage of ``alias`` (default: the queue database), chosen on first use."""
    alias = alias or db.alias()
    storage = _chosen.get(alias)
    if storage is None:
        with _lock:
            storage = _chosen.setdefault(alias, implementations(alias)[-1])
    return storage


def implementations(alias: str | None = None) -> list[Storage]:
    """Every storage that runs on ``alias``: the portable one first, then its fast one."""
    alias = alias or db.alias()
    fast = IMPLEMENTATIONS.get(connections[alias].vendor)
    return [Storage(alias), *([fast()(alias)] if fast else [])]


@contextlib.contextmanager
def using(storage: Storage) -> Iterator[Storage]:
    """Make ``storage`` the one of its alias inside the block (contract tests, benchmarks)."""
    with _lock:
        before = _chosen.get(storage.alias)
        _chosen[storage.alias] = storage
    try:
        yield storage
    finally:
        with _lock:
            if before is None:
                _chosen.pop(storage.alias, None)
            else:
                _chosen[storage.alias] = before


def enqueue(jobs: list) -> list:
    """Enqueue ``jobs`` through the queue database's storage (see Storage.enqueue)."""
    return for_alias().enqueue(jobs)


def claim(queues: Sequence[str], limit: int, process: Process | None) -> list[ClaimedExecution]:
    """Claim through the queue database's storage (see Storage.claim)."""
    return for_alias().claim(queues, limit, process)


def database_files(alias: str | None = None) -> file_changes.DatabaseFiles | None:
    """What tells without a query that ``alias``'s database was written: SQLite's files.

    None where the database is a server (its clients cannot see its files) or in memory.
    """
    connection = connections[alias or db.alias()]
    if connection.vendor != "sqlite":
        return None
    return file_changes.for_database(connection.settings_dict)
