"""Enqueue on MySQL/MariaDB: due, unlimited jobs with their ready executions.

One job is one script (``script``): its INSERT, then its ready row's, which reads
the job's id with ``LAST_INSERT_ID()``. Many jobs are multi-row INSERTs of up to
``CHUNK`` jobs each, every one followed by an ``INSERT ... SELECT`` of their ready rows,
in one transaction: one round trip per chunk, then the driver's COMMIT. A multi-row
INSERT takes its ids as one consecutive block (``LAST_INSERT_ID()`` the first, in row
order) when InnoDB's auto-increment lock mode is "consecutive" (0 or 1: MariaDB's
default, not MySQL 8's); the ready rows are those of the block, and the counts are
checked before the COMMIT. With interleaved ids (mode 2) many jobs take the portable
path. A job's labels go into the label index (``JobLabel``) in the same round trip,
between its INSERT and its ready row's (the label table has no auto-increment column:
``LAST_INSERT_ID()`` is still the job's there).

While fair share is in use, the ready rows carry their fairness key and their place
in the fair order, read first (``fair_share.orders``: two reads) and written by the
same scripts: a block's places as a JSON array its ready rows' ``INSERT ... SELECT``
joins by offset, so its counts are checked as before.

The values are converted here, column by column, as Django's ``get_db_prep_save``
would: JSON dumped, aware datetimes made naive in the connection's time zone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import weakref
from collections.abc import Callable
from typing import Any

from django.db.models import DateTimeField, Field, ForeignKey, JSONField
from django.utils import timezone

from ... import db
from ...models import Job, JobLabel, ReadyExecution, fair_share
from ...models.execution import READY_COPIED_FIELDS
from ..sql import columns, table
from . import script
from .script import COMMIT, START

#: Jobs per multi-row INSERT: a statement of a few hundred kilobytes for small arguments,
#: well under ``max_allowed_packet`` (16 MB by default on MariaDB, 64 MB on MySQL 8).
CHUNK = 1000

# The ready rows' columns: the job's id, what they copy from the job, and when.
READY_COLUMNS = ", ".join(["job_id", *READY_COPIED_FIELDS, "created_at"])
# ... and, while fair share is in use, its key and place in the fair order.
FAIR_READY_COLUMNS = f"{READY_COLUMNS}, fairness_key, fair_order"


def enqueue_ready(job: Job) -> None:
    """Insert ``job`` (due, not concurrency-limited) and its ready execution, in one trip."""
    connection, now = db.connection(), timezone.now()
    values = _row(job, now, _converters())
    ready_at = connection.ops.adapt_datetimefield_value(now)
    labels = [(_labels_of_one_sql(len(job.labels)), job.labels)] if job.labels else []
    fair = [job.fairness_key, *fair_share.orders([job])] if fair_share.needed([job]) else []
    results = script.run(
        [
            START,
            (_insert_sql(1), values),
            *labels,
            (_ready_sql(bool(fair)), [*_copied(job), ready_at, *fair]),
            COMMIT,
        ]
    )
    job.pk = results[1].lastrowid
    job._state.adding, job._state.db = False, db.alias()


def enqueue_all_ready(jobs: list[Job]) -> bool:
    """Insert many due, unlimited jobs and their ready executions; False: not done here.

    Nothing is written when it returns False (ids not consecutive): the caller takes the
    portable path.
    """
    if not _consecutive_ids(db.alias()):
        return False
    connection, converters, now = db.connection(), _converters(), timezone.now()
    ready_at = connection.ops.adapt_datetimefield_value(now)
    fair = fair_share.orders(jobs) if fair_share.needed(jobs) else None
    try:
        first_ids, step = [], None
        for start in range(0, len(jobs), CHUNK):
            chunk = jobs[start : start + CHUNK]
            values = [value for job in chunk for value in _row(job, now, converters)]
            labelled = [(offset, label) for offset, j in enumerate(chunk) for label in j.labels]
            statements = [
                (_insert_sql(len(chunk)), values),
                *_labels_of_block(labelled),
                _ready_of_block(
                    chunk, ready_at, None if fair is None else fair[start : start + CHUNK]
                ),
            ]
            if step is None:  # the first round trip begins the transaction
                statements = [START, ("SELECT @@auto_increment_increment", ()), *statements]
            results = script.run(statements)
            if step is None:
                step = results[1].rows[0][0]
            inserted, ready = results[-3 if labelled else -2], results[-1]
            if not inserted.rowcount == ready.rowcount == len(chunk):
                raise _NotConsecutive
            first_ids.append(inserted.lastrowid)
        connection.commit()  # the transaction the first script began
    except _NotConsecutive:
        connection.rollback()
        return False
    except BaseException:  # a value that would not convert, a lost connection: end it
        with contextlib.suppress(Exception):  # a lost connection rolled back by itself
            connection.rollback()
        raise
    for start, first in zip(range(0, len(jobs), CHUNK), first_ids, strict=True):
        for offset, job in enumerate(jobs[start : start + CHUNK]):
            job.pk = first + offset * step
            job._state.adding, job._state.db = False, db.alias()
    return True


class _NotConsecutive(Exception):
    """A chunk's ready rows were not exactly its jobs: its ids were not one block."""


@functools.cache
def _consecutive_ids(alias: str) -> bool:
    """Whether a multi-row INSERT takes consecutive ids (a server setting, fixed at start)."""
    with db.connection().cursor() as cursor:
        cursor.execute("SELECT @@innodb_autoinc_lock_mode")
        return cursor.fetchone()[0] in (0, 1)


def _row(job: Job, now, converters: list[Callable[[Any], Any] | None]) -> list[Any]:
    # Read straight from the instance: the one value computed on save is updated_at
    # (auto_now), set here as pre_save would.
    job.updated_at = now
    state = job.__dict__
    pairs = zip(converters, _attnames(), strict=True)
    return [state[name] if convert is None else convert(state[name]) for convert, name in pairs]


def _copied(job: Job) -> list[Any]:
    return [getattr(job, name) for name in READY_COPIED_FIELDS]


@functools.cache
def _fields() -> tuple[Field, ...]:
    """The jobs table's columns an insert writes: all but the id."""
    return tuple(field for field in script.job_fields() if not field.primary_key)


@functools.cache
def _attnames() -> tuple[str, ...]:
    return tuple(field.attname for field in _fields())


def _converters() -> list[Callable[[Any], Any] | None]:
    """Each column's converter (None: the value as it is), made once per connection."""
    connection = db.connection()
    made = _CONVERTERS.get(connection)
    if made is None:
        made = _CONVERTERS[connection] = [_converter(f, connection) for f in _fields()]
    return made


# By connection (one per thread and alias): a converter may use its time zone.
_CONVERTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _converter(field: Field, connection) -> Callable[[Any], Any] | None:
    """What ``field.get_db_prep_save`` does to a plain value, without its layers."""
    if isinstance(field, JSONField):
        encoder = field.encoder
        if encoder is None:  # json's own encoder, cached by json.dumps when called plainly
            return lambda value: None if value is None else json.dumps(value)
        return lambda value: None if value is None else json.dumps(value, cls=encoder)
    if isinstance(field, DateTimeField):
        return _datetime_converter(connection)
    if isinstance(field, ForeignKey) or field.get_internal_type() in _PLAIN:
        return None  # the value as it is
    return lambda value: field.get_db_prep_save(value, connection)


def _datetime_converter(connection) -> Callable[[Any], Any]:
    """``adapt_datetimefield_value``; for the common UTC datetime on a UTC connection,
    without its checks (a bulk enqueue converts thousands)."""
    adapt = connection.ops.adapt_datetimefield_value
    if connection.timezone is not dt.UTC and connection.timezone_name != "UTC":
        return adapt

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if value.tzinfo is dt.UTC:
            return str(value.replace(tzinfo=None))
        return adapt(value)

    return convert


_PLAIN = frozenset({"CharField", "SmallIntegerField", "IntegerField", "BigIntegerField"})


@functools.cache
def _insert_sql(rows: int) -> str:
    fields = _fields()
    row = f"({', '.join(['%s'] * len(fields))})"
    return f"INSERT INTO {table(Job)} ({columns(fields)}) VALUES {', '.join([row] * rows)}"


@functools.cache
def _ready_sql(fair: bool) -> str:
    # LAST_INSERT_ID(): the job's id, generated by the insert just before.
    params = ", ".join(["%s"] * (len(READY_COPIED_FIELDS) + (3 if fair else 1)))
    into = FAIR_READY_COLUMNS if fair else READY_COLUMNS
    return f"INSERT INTO {table(ReadyExecution)} ({into}) VALUES (LAST_INSERT_ID(), {params})"


@functools.lru_cache(maxsize=32)
def _labels_of_one_sql(count: int) -> str:
    # LAST_INSERT_ID(): the job's id, as for its ready row.
    rows = ", ".join(["(%s, LAST_INSERT_ID())"] * count)
    return f"INSERT INTO {table(JobLabel)} (label, job_id) VALUES {rows}"


def _labels_of_block(labelled: list[tuple[int, str]]) -> list[tuple[str, list]]:
    """The label rows of a block's jobs (``(offset in the block, label)``), ids computed
    as the ready rows' are: the first id, then one every @@auto_increment_increment."""
    if not labelled:
        return []
    rows = ", ".join(["(%s, LAST_INSERT_ID() + %s * @@auto_increment_increment)"] * len(labelled))
    sql = f"INSERT INTO {table(JobLabel)} (label, job_id) VALUES {rows}"
    return [(sql, [value for offset, label in labelled for value in (label, offset)])]


def _ready_of_block(chunk: list[Job], ready_at, orders: list[float] | None) -> tuple[str, list]:
    """The ready rows of a block's jobs; fair, each with its place in the fair order
    (``orders``, the same order)."""
    if orders is None:
        return _ready_of_block_sql(), [ready_at, len(chunk) - 1]
    return _fair_ready_of_block_sql(), [ready_at, json.dumps(orders)]


@functools.cache
def _fair_ready_of_block_sql() -> str:
    # The block's jobs by their offset in it (the ids follow as in _ready_of_block_sql),
    # each joined to its place: as many rows as jobs only if the ids were one block.
    copied = ", ".join(f"job.{name}" for name in READY_COPIED_FIELDS)
    places = "JSON_TABLE(%s, '$[*]' COLUMNS (n FOR ORDINALITY, fair_order DOUBLE PATH '$'))"
    return (
        f"INSERT INTO {table(ReadyExecution)} ({FAIR_READY_COLUMNS}) "
        f"SELECT job.id, {copied}, %s, job.fairness_key, place.fair_order FROM {places} place "
        f"STRAIGHT_JOIN {table(Job)} job FORCE INDEX (PRIMARY) "
        "ON job.id = LAST_INSERT_ID() + (place.n - 1) * @@auto_increment_increment"
    )


@functools.cache
def _ready_of_block_sql() -> str:
    # The jobs just inserted: LAST_INSERT_ID() is the first id of the block, the others
    # follow every @@auto_increment_increment.
    copied = ", ".join(READY_COPIED_FIELDS)
    return (
        f"INSERT INTO {table(ReadyExecution)} ({READY_COLUMNS}) SELECT id, {copied}, %s "
        f"FROM {table(Job)} WHERE id BETWEEN LAST_INSERT_ID() "
        "AND LAST_INSERT_ID() + %s * @@auto_increment_increment"
    )
