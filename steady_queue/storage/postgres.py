"""The hot paths in one statement each on PostgreSQL: claim and finish a job.

The ORM needs a transaction of several statements for each (BEGIN, two or three
writes, COMMIT): every one a round trip, plus Python overhead. PostgreSQL runs
data-modifying CTEs as one atomic statement, so in autocommit each path here is a
single round trip with the same all-or-nothing effect, and the same locking as the
ORM path it replaces (SKIP LOCKED for the claim; a row lock on the claim to finish).
Other databases, and the uncommon cases (scheduled or concurrency-limited jobs,
failures), keep the ORM paths. Enqueue, one job or many, is in postgres_enqueue.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from django.db.models import Field
from django.utils import timezone

from . import db

if TYPE_CHECKING:
    from datetime import datetime

    from .models import ClaimedExecution, Job, Process


ONLY_WHEN_ASKED = 2**31 - 1


def in_use() -> bool:
    """Whether the queue database is PostgreSQL, where these statements apply."""
    return db.connection().vendor == "postgresql"


def claim(queues: list[str], limit: int, process: Process | None) -> list[ClaimedExecution]:
    """Claim up to ``limit`` ready jobs from ``queues`` (in order), best first in each.

    Reads the queues as QueueSelector does, with the pauses checked inside each claiming
    statement: while nothing is paused, a poll of ``*`` is one statement, and a poll of
    exact queue names one per queue. Wildcards, or ``*`` with paused queues, take the
    selector's DISTINCT over the ready queues first.
    """
    from .models import ReadyExecution
    from .queue_selector import QueueSelector

    queues = queues or ["*"]
    if "*" in queues:
        claimed, paused = _claim_from(None, limit, process)
        if not paused:
            return claimed  # the one statement read every queue
    if "*" in queues or any("*" in entry for entry in queues):
        names = QueueSelector(queues, ReadyExecution.objects.using(db.alias())).scoped_queues()
    else:
        names = list(dict.fromkeys(queues))
    claimed = []
    for name in names:
        if name is None or len(claimed) >= limit:
            break  # None: the pauses are gone, and the queues were empty
        claimed += _claim_from(name, limit - len(claimed), process)[0]
    return claimed


@dataclasses.dataclass(eq=False)
class NextClaim:
    """A worker thread's next claim, made by the statement that records its job's success.

    One statement instead of two per job while a queue has work: the success of the job
    just run and the claim of the next one commit together. ``allowed()`` is asked once,
    just before; then ``made`` is set and ``claimed`` holds the claim (or nothing), or
    ``failed`` says that the statement failed and may have claimed a job all the same.
    """

    queue_name: str | None  # None: all queues, while none is paused
    process: Process | None
    allowed: Callable[[], bool]
    made: bool = False
    failed: bool = False
    claimed: list[ClaimedExecution] = dataclasses.field(default_factory=list)


def finish(claimed: ClaimedExecution, attempt: dict, return_value: Any, now: datetime) -> bool:
    """Record the success of ``claimed`` if the claim is still ours; False if it was lost.

    Deleting the claim row locks it, exactly as the ORM path's SELECT ... FOR UPDATE:
    whoever deletes it first (this worker, or a supervisor failing the job because the
    process died) records the outcome; the other finds no row and changes nothing.
    With a ``successor`` (a NextClaim) on ``claimed``, the same statement claims the
    thread's next job.
    """
    from .models import Job

    connection = db.connection()
    fields = Job._meta
    params = [claimed.job_id, *([] if claimed.process_id is None else [claimed.process_id])]
    params += [
        now,
        fields.get_field("return_value").get_db_prep_save(return_value, connection),
        fields.get_field("attempts").get_db_prep_save([attempt], connection),
        now,
    ]
    successor = getattr(claimed, "successor", None)
    if successor is None or successor.made or not successor.allowed():
        with _prepared_cursor() as cursor:
            cursor.execute(_finish_sql(claimed.process_id is None), params)
            return cursor.rowcount == 1
    successor.made = True
    try:
        return _finish_and_claim(claimed, params, successor)
    except BaseException:
        successor.failed = True
        raise


def _finish_and_claim(claimed: ClaimedExecution, params: list, successor: NextClaim) -> bool:
    from .models import ClaimedExecution

    now, queue_name, process = timezone.now(), successor.queue_name, successor.process
    params += [] if queue_name is None else [queue_name, queue_name]
    params += [] if process is None else [process.pk]
    params += [1, process.pk if process else None, now]
    sql = _finish_and_claim_sql(
        claimed.process_id is None, queue_name is not None, process is not None
    )
    with _prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    jobs = _jobs_from_rows([row[1:] for row in rows if row[1] is not None])
    successor.claimed = [ClaimedExecution.claimed_for(job, process, now) for job in jobs]
    return rows[0][0] == 1


def _claim_from(
    queue_name: str | None, limit: int, process: Process | None
) -> tuple[list[ClaimedExecution], bool]:
    """Claim from one queue (None: all, unless a queue is paused); and whether one is."""
    from .models import ClaimedExecution

    now = timezone.now()
    params = [] if queue_name is None else [queue_name, queue_name]
    params += [] if process is None else [process.pk]
    params += [limit, process.pk if process else None, now]
    with _prepared_cursor() as cursor:
        cursor.execute(_claim_sql(queue_name is not None, process is not None), params)
        rows = cursor.fetchall()
    jobs = _jobs_from_rows([row for row in rows if row[0] is not None])
    claimed = [ClaimedExecution.claimed_for(job, process, now) for job in jobs]
    return claimed, len(jobs) < len(rows)


@functools.cache
def _claim_sql(one_queue: bool, registered: bool) -> str:
    from .models import Job

    # Claiming from all queues, a row of NULLs says that some queue is paused.
    fields = Job._meta.concrete_fields
    flag = "" if one_queue else f" UNION ALL SELECT {_nulls(fields)} WHERE {_paused(False)}"
    return (
        f"WITH {_claiming(one_queue, registered)} SELECT {columns(fields, 'j.')} FROM claimed "
        f"JOIN {table(Job)} j ON j.id = claimed.job_id{flag}"
    )


@functools.cache
def _finish_sql(without_process: bool) -> str:
    return f"WITH {_finishing(without_process)} SELECT 1 FROM finished"


@functools.cache
def _finish_and_claim_sql(without_process: bool, one_queue: bool, registered: bool) -> str:
    from .models import Job

    # One row, however it went: how many jobs finished (1 or 0), and the claimed job.
    fields = Job._meta.concrete_fields
    finished = "(SELECT count(*) FROM finished)"
    return (
        f"WITH {_finishing(without_process)}, {_claiming(one_queue, registered)} "
        f"SELECT {finished}, {columns(fields, 'j.')} FROM claimed "
        f"JOIN {table(Job)} j ON j.id = claimed.job_id "
        f"UNION ALL SELECT {finished}, {_nulls(fields)} WHERE NOT EXISTS (SELECT FROM claimed)"
    )


def _finishing(without_process: bool) -> str:
    """CTEs ``claim`` (our claim, deleted) and ``finished`` (its job, marked finished)."""
    from .models import ClaimedExecution, Job

    process = "process_id IS NULL" if without_process else "process_id = %s"
    return (
        f"claim AS (DELETE FROM {table(ClaimedExecution)} WHERE job_id = %s AND {process} "
        "RETURNING job_id), "
        f"finished AS (UPDATE {table(Job)} SET finished_at = %s, return_value = %s, "
        "attempts = attempts || %s, updated_at = %s WHERE id IN (SELECT job_id FROM claim) "
        "RETURNING id)"
    )


def _claiming(one_queue: bool, registered: bool) -> str:
    """CTEs that lock the best ready jobs, delete them and insert ``claimed``.

    ``registered``: only while the claiming process's row exists (a pruned one claims
    nothing more; see Process.row_exists).
    """
    from .models import ClaimedExecution, Process, ReadyExecution

    # A one-time filter on the pauses: the scan of the poll index is the same as without.
    where = f"queue_name = %s AND NOT {_paused(True)}" if one_queue else f"NOT {_paused(False)}"
    if registered:  # a one-time filter too
        where += f" AND EXISTS (SELECT FROM {table(Process)} WHERE id = %s)"
    return (
        # MATERIALIZED: the locking SELECT runs exactly once, never inlined twice.
        f"picked AS MATERIALIZED (SELECT job_id FROM {table(ReadyExecution)} "
        f"WHERE {where} ORDER BY priority DESC, job_id LIMIT %s FOR UPDATE SKIP LOCKED), "
        f"ready AS (DELETE FROM {table(ReadyExecution)} r USING picked "
        "WHERE r.job_id = picked.job_id RETURNING r.job_id), "
        f"claimed AS (INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
        "SELECT job_id, %s, %s FROM ready RETURNING job_id)"
    )


def _paused(one_queue: bool) -> str:
    from .models import Pause

    return f"EXISTS (SELECT 1 FROM {table(Pause)}{' WHERE queue_name = %s' if one_queue else ''})"


def _nulls(fields: list[Field]) -> str:
    return ", ".join(["NULL"] * len(fields))


def _prepared_cursor():
    """A cursor whose statements PostgreSQL prepares once per connection, then only runs.

    Planning a claim costs more than running it. Django's own cursors bind parameters
    client-side, which cannot prepare; this one binds them server-side, for these few
    statements only, and is still Django's cursor wrapper (logged and counted).
    """
    connection = db.connection()
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # psycopg prepares nothing at all while this is None (Django's default); this high
        # a threshold still prepares nothing by itself, only what asks with prepare=True.
        raw.prepare_threshold = ONLY_WHEN_ASKED
    with connection.wrap_database_errors:
        return connection._prepare_cursor(_preparing_cursor_class()(raw))


@functools.cache
def _preparing_cursor_class():
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True, binary=binary)

    return PreparingCursor


def _jobs_from_rows(rows: list[tuple]) -> list[Job]:
    from .models import Job

    fields, connection = Job._meta.concrete_fields, db.connection()
    names = [field.attname for field in fields]
    converters = [
        (index, field, converter)
        for index, field in enumerate(fields)
        for converter in field.get_db_converters(connection)
    ]
    jobs = []
    for row in rows:
        values = list(row)
        for index, field, converter in converters:
            values[index] = converter(values[index], field, connection)
        jobs.append(Job.from_db(db.alias(), names, values))
    return sorted(jobs, key=lambda job: (-job.priority, job.pk))


def table(model) -> str:
    """The model's table name, quoted for the queue database."""
    return db.connection().ops.quote_name(model._meta.db_table)


def columns(fields: Sequence[Field], prefix: str = "") -> str:
    """The fields' column names, quoted, comma-separated."""
    quote = db.connection().ops.quote_name
    return ", ".join(f"{prefix}{quote(field.column)}" for field in fields)
