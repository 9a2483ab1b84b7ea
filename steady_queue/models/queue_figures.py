"""Per-queue figures for probes and scrapes, read from indexes in a fixed number of queries.

Whatever the table sizes: queue names come from a loose index scan (each step one
index look-up for the next name), a queue's next job from the first entry of the poll
index, and counts stop at ``COUNT_CAP`` index entries. The SQL is the same on SQLite,
PostgreSQL and MariaDB (recursive CTE, scalar subqueries, LIMIT in derived tables).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from django.db import models
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from .. import db
from .execution import ReadyExecution
from .pause import Pause

# Queue names read per table: far more than any deployment has, so a query stays bounded
# (and under SQLite's 500 parts of one UNION ALL).
MAX_QUEUES = 200
# Jobs counted per queue and state at most: reading this many index entries stays fast.
COUNT_CAP = 10_000


def queue_names(*tables: type[models.Model]) -> list[list[str]]:
    """The distinct ``queue_name`` of each model's rows (up to MAX_QUEUES each), in one query.

    Each model needs an index that starts with ``queue_name``: every step of the scan is
    a look-up of the next name in it, not a read of the rows in between.
    """
    if not tables:
        return []
    qn = db.connection().ops.quote_name
    ctes, selects = [], []
    for number, model in enumerate(tables):
        table, name = qn(model._meta.db_table), qn("queue_name")
        ctes.append(
            f"n{number}(name, depth) AS ("
            f"SELECT MIN({name}), 1 FROM {table} "
            f"UNION ALL SELECT (SELECT MIN({name}) FROM {table} WHERE {name} > n{number}.name), "
            f"depth + 1 FROM n{number} WHERE n{number}.name IS NOT NULL AND depth < {MAX_QUEUES})"
        )
        selects.append(f"SELECT {number}, name FROM n{number} WHERE name IS NOT NULL")
    sql = f"WITH RECURSIVE {', '.join(ctes)} {' UNION ALL '.join(selects)}"
    found: list[list[str]] = [[] for _ in tables]
    with db.connection().cursor() as cursor:
        cursor.execute(sql)
        for number, name in cursor.fetchall():
            found[number].append(name)
    return [sorted(names) for names in found]


def next_ready_at(queues: Sequence[str], *, paused: bool = True) -> dict[str, datetime]:
    """When the job a worker would take next from each queue became ready (if any is).

    The first entry of the poll index per queue: one index look-up each, in one query.
    ``paused=False`` leaves paused queues out.
    """
    qn = db.connection().ops.quote_name
    table, name = qn(ReadyExecution._meta.db_table), qn("queue_name")
    order = f"{qn('priority')} DESC, {qn('fair_order')}, {qn('job_id')}"  # POLL_ORDER
    unpaused = f" AND NOT EXISTS (SELECT 1 FROM {qn(Pause._meta.db_table)} WHERE {name} = %s)"
    condition = "" if paused else unpaused
    queues = list(queues)[:MAX_QUEUES]
    parts = [
        f"SELECT {number}, (SELECT {qn('created_at')} FROM {table} "
        f"WHERE {name} = %s{condition} ORDER BY {order} LIMIT 1)"
        for number in range(len(queues))
    ]
    rows = _run(parts, [[queue] if paused else [queue, queue] for queue in queues])
    return {queues[number]: _aware(value) for number, value in rows if value is not None}


class Counts:
    """Capped counts per queue of several tables, gathered then read in one query.

    ``add(key, model, queues, where=..., params=...)`` counts ``model``'s rows of each
    queue (and ``where``, SQL on its own columns) up to COUNT_CAP; ``run()`` answers
    ``{(key, queue): count}`` for the counts above 0.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._params: list[list] = []
        self._keys: list[tuple[str, str]] = []

    def add(
        self,
        key: str,
        model: type[models.Model],
        queues: Iterable[str],
        where: str = "",
        params: Sequence = (),
    ) -> None:
        qn = db.connection().ops.quote_name
        table = qn(model._meta.db_table)
        condition = f" AND ({where})" if where else ""
        for queue in list(queues)[:MAX_QUEUES]:
            number = len(self._keys)
            self._parts.append(
                f"SELECT {number}, (SELECT COUNT(*) FROM (SELECT 1 AS one FROM {table} "
                f"WHERE {qn('queue_name')} = %s{condition} LIMIT {COUNT_CAP}) capped)"
            )
            self._params.append([queue, *params])
            self._keys.append((key, queue))

    def run(self) -> dict[tuple[str, str], int]:
        rows = _run(self._parts, self._params)
        return {self._keys[number]: count for number, count in rows if count}


def _run(parts: list[str], params: list[list]) -> list[tuple]:
    if not parts:
        return []
    with db.connection().cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), [p for chunk in params for p in chunk])
        return cursor.fetchall()


def _aware(value: datetime | str) -> datetime:
    # A raw cursor skips the ORM's converters: SQLite answers text, MariaDB naive UTC.
    moment = parse_datetime(value) if isinstance(value, str) else value
    return timezone.make_aware(moment, UTC) if timezone.is_naive(moment) else moment
