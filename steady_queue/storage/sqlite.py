"""The hot paths on SQLite: each one write transaction of as few statements as it can be.

SQLite has one writer at a time and no round trips: what a path costs is its Python
(the ORM's, per statement) and how long it holds the write lock. The portable paths
take a transaction per step: a busy worker thread sends 11 statements per job (its
finish, then the pauses and a claim of five statements), a worker polling for 5 threads
5.4. Here (SQLite >= 3.35, for ``RETURNING``; older ones take the portable paths):

- claim: ``BEGIN IMMEDIATE``, one ``DELETE ... RETURNING`` that takes the best ready
  rows and returns their jobs' rows, one multi-row INSERT of the claims, COMMIT
  (sqlite_claim);
- finish a plain success, and claim the thread's next job with it: one transaction
  deleting the claim, marking the job finished and claiming (6 statements per job);
- finish a concurrency-limited job's success, and pass its slot to the key's next
  blocked job, claimed for the thread: one transaction of 7 statements (sqlite_hand_on);
- enqueue due, unlimited jobs: the jobs' INSERT ... RETURNING id and their ready rows'
  INSERT, multi-row for many (sqlite_enqueue; the rows' values by sqlite_values).

The uncommon cases (scheduled, concurrency-limited or unique jobs on enqueue, jobs of a
group, failures) take the portable paths, as on PostgreSQL.

Every transaction here starts with ``BEGIN IMMEDIATE``, whatever the project's
``transaction_mode``: it takes the write lock at once, waiting for it up to the busy
timeout (the "timeout" OPTION), so a transaction that reads before it writes (a
wildcard's queue names) cannot fail with "database is locked" when it comes to write.
Run the database in WAL mode, with a busy timeout of 10 s or more and IMMEDIATE
transactions for the ORM's paths (system check steady_queue.W001 says how): readers
(the dashboard) then never wait for the writer, nor writers fail for waiting.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from .. import db
from ..models import ClaimedExecution, Job
from ..models.claimed_finish import Outcome, Success
from . import sqlite_claim, sqlite_enqueue
from .base import ClaimNext, Finished, Storage
from .finish_group import FinishGroups, Finishing, claimed_along, shape_of
from .sql import table
from .sqlite_claim import by_name, named
from .sqlite_values import moment

if TYPE_CHECKING:
    from ..models import Process
    from ..models.attempt import Attempt

logger = logging.getLogger("steady_queue.claims")

#: DELETE/INSERT ... RETURNING came with SQLite 3.35.
MIN_VERSION = (3, 35, 0)

# The connection whose write transaction of this module this thread is inside, if any.
_writing: ContextVar[object] = ContextVar("steady_queue_sqlite_writing", default=None)


def available() -> bool:
    """Whether the SQLite library Python runs has what the fast paths use."""
    return sqlite3.sqlite_version_info >= MIN_VERSION


@contextlib.contextmanager
def write_transaction(*, orm_writes: bool = False) -> Iterator[None]:
    """A transaction on the queue database that holds SQLite's write lock from its start.

    Inside a caller's transaction it is a savepoint of it (the caller chose how it
    began); inside one of this module's, nothing more: a failure rolls it all back.
    Begun here, it is ``BEGIN IMMEDIATE`` and ``COMMIT`` sent on a cursor: Django's
    ``atomic()`` around them costs four times the two statements (about 20 us of a
    single enqueue's 300), and the statements of this package, and the ORM's reads,
    need nothing of it. ``orm_writes``: the block writes through the ORM, whose own
    atomic blocks must know of the transaction (Django's ``atomic()``, begun IMMEDIATE).
    """
    connection = db.connection()
    if _writing.get() is connection:
        if orm_writes and not connection.in_atomic_block:
            # Django, unaware of the cursor's transaction, would send BEGIN inside it.
            raise RuntimeError("ORM writes inside a cursor transaction")
        yield
        return
    token = _writing.set(connection)
    try:
        if connection.in_atomic_block:
            with db.atomic():
                yield
        elif orm_writes:
            with _atomic_immediate(connection):
                yield
        else:
            with _immediate(connection):
                yield
    finally:
        _writing.reset(token)


@contextlib.contextmanager
def _immediate(connection) -> Iterator[None]:
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("BEGIN IMMEDIATE")
        try:
            yield
            cursor.execute("COMMIT")
        except BaseException:
            if connection.connection.in_transaction:  # SQLite ends some on its own errors
                cursor.execute("ROLLBACK")
            raise


@contextlib.contextmanager
def _atomic_immediate(connection) -> Iterator[None]:
    connection.ensure_connection()  # connecting sets transaction_mode from the settings
    chosen, connection.transaction_mode = connection.transaction_mode, "IMMEDIATE"
    try:
        with db.atomic():
            connection.transaction_mode = chosen
            yield
    finally:
        connection.transaction_mode = chosen


class SqliteStorage(Storage):
    """Claim, finish (with the next claim) and enqueue, each one write transaction."""

    def __init__(self, alias: str):
        super().__init__(alias)
        from . import sqlite_grouped  # it builds on this module's transaction

        self._groups = FinishGroups(sqlite_grouped.write)

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        # A unique job's key is taken through the ORM (UniqueLock): the portable path.
        plain = all(job.is_ready_on_enqueue and not job.unique_key for job in jobs)
        if not (jobs and plain and available()):
            return super().enqueue(jobs)
        with write_transaction():
            sqlite_enqueue.insert_ready(jobs, timezone.now())
        return jobs

    def claim(
        self, queues: Sequence[str], limit: int, process: Process | None
    ) -> list[ClaimedExecution]:
        if not available():
            return super().claim(queues, limit, process)
        with write_transaction():
            return sqlite_claim.claim(queues, limit, process)

    def finish(
        self, claimed: ClaimedExecution, outcome: Outcome, *, then_claim: ClaimNext | None = None
    ) -> Finished:
        """A plain success in one transaction, which also claims the next job when asked.

        A limited job's success passes its slot on in one transaction too (sqlite_hand_on).
        """
        from . import sqlite_hand_on  # it builds on this module's transaction

        if available() and sqlite_hand_on.applies(claimed, outcome, then_claim):
            return sqlite_hand_on.finish(self, claimed, outcome, then_claim)
        plain = isinstance(outcome, Success) and outcome.hands_nothing_on(claimed)
        if not (plain and available()):
            return super().finish(claimed, outcome, then_claim=then_claim)
        # A worker thread's finish may share a transaction with its neighbours' (see
        # sqlite_grouped): one queue or all, and not inside a caller's transaction.
        along = claimed_along(then_claim)
        shape = shape_of(claimed, then_claim, along) if along is not None else None
        asked: list[bool] = []  # then_claim.allowed()'s one answer
        made: list[list[ClaimedExecution]] = []  # what a committed transaction claimed

        def write(attempt: Attempt) -> bool:
            values = success_values(attempt, outcome.return_value)

            def finish_alone() -> bool:
                with write_transaction():
                    return finish_job(claimed.job_id, claimed.process_id, *values)

            def alone() -> tuple[bool, list[ClaimedExecution] | None]:
                finished: list[bool] = []
                try:
                    with write_transaction():
                        recorded = finish_job(claimed.job_id, claimed.process_id, *values)
                        finished.append(recorded)
                        if not asked:
                            asked.append(then_claim.allowed())
                        if not asked[0]:
                            return recorded, None
                        queues, limit = then_claim.queues, then_claim.limit
                        return recorded, self.claim(queues, limit, then_claim.process)
                except Exception as exc:
                    if not finished:
                        raise  # the finish failed: ClaimedExecution.record decides
                    logger.debug("Could not claim a next job: %s", exc)
                    return finish_alone(), None  # the claim's failure rolled it all back

            if then_claim is None or asked:  # nothing to claim, or a retry: finish only
                return finish_alone()
            if shape is not None:  # asked first, for the group (alone: inside, after)
                asked.append(then_claim.allowed())
            entry = Finishing(claimed.job_id, *values, claims=bool(asked and asked[0]), alone=alone)
            recorded, claimed_next = self._groups.finish(shape, entry)
            if claimed_next is not None:
                made.append(claimed_next)
            return recorded

        recorded = claimed.record(outcome, write=write)
        if asked and asked[0]:
            # Claimed, or failed to (rolled back, it took nothing; the worker's next poll
            # releases what it may hold all the same).
            return Finished(recorded, made[0] if made else None, claim_failed=not made)
        return Finished(recorded)


def record_success(claimed: ClaimedExecution, attempt: Attempt, return_value: Any) -> bool:
    """Delete the claim if it is still ours and mark its job finished; whether it was."""
    values = success_values(attempt, return_value)
    return finish_job(claimed.job_id, claimed.process_id, *values)


def success_values(attempt: Attempt, return_value: Any) -> tuple[Any, Any, str]:
    """A success's finish time, return value and attempt, as ``finish_job`` takes them."""
    connection = db.connection()
    value = Job._meta.get_field("return_value").get_db_prep_save(return_value, connection)
    return moment(attempt.finished_at, connection), value, json.dumps(attempt.to_dict())


def finish_job(job_id: int, process_id: int | None, finished_at, value, attempt: str) -> bool:
    """Delete the job's claim if it is the process's and mark the job finished; if it was."""
    delete, update = _record_success_sql()
    with db.connection().cursor() as cursor:
        cursor.execute(delete, by_name([job_id, process_id]))
        if cursor.rowcount != 1:
            return False  # lost (pruned, released): nothing changes
        cursor.execute(update, by_name([finished_at, value, attempt, finished_at, job_id]))
    return True


@functools.cache
def _record_success_sql() -> tuple[str, str]:
    return (
        named(f"DELETE FROM {table(ClaimedExecution)} WHERE job_id = %s AND process_id IS %s"),
        named(
            f"UPDATE {table(Job)} SET finished_at = %s, return_value = %s, "
            "attempts = json_insert(attempts, '$[#]', json(%s)), updated_at = %s WHERE id = %s"
        ),
    )
