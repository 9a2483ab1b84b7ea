"""A limited job's success and its slot's hand-on in one write transaction on SQLite.

The portable finish hands a concurrency slot on with about ten statements built by the
ORM (``models.execution.slot_hand_on``); the key's slot stands idle for all of them. Here one
``BEGIN IMMEDIATE`` transaction deletes the claim, marks the job finished, and with one
``DELETE ... RETURNING`` takes the key's next blocked job, returning its row, only if
the worker would have claimed it next (the same conditions as the portable hand-on, all
in that statement's WHERE: its queue polled and not paused, no ready job in the polled
queues, the key's semaphore there and not over its limit); then renews the semaphore
and claims the job for the finishing thread: 7 statements, BEGIN and COMMIT included.
SQLite has one writer, so nothing can change between these statements. When the slot
cannot pass (nothing blocked, or a condition fails), it goes back the portable way in
the same transaction, and the thread claims from ready as usual.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ... import db
from ...models import BlockedExecution, ClaimedExecution, Job, Pause, ReadyExecution, Semaphore
from ..base import ClaimNext
from ..sql import table
from .claim import by_name, job_columns, jobs_from_rows, named
from .success import record_success
from .transaction import write_transaction
from .values import moment

if TYPE_CHECKING:
    from datetime import datetime

    from ...models.attempt import Attempt


def finish_and_hand_on(
    claimed: ClaimedExecution, attempt: Attempt, return_value: Any, then_claim: ClaimNext
) -> tuple[bool, ClaimedExecution | None]:
    """Record a success; (whether it was ours, the job its slot passed to, claimed)."""
    with write_transaction(orm_writes=True):  # the slot back, if at all, by the ORM
        if not record_success(claimed, attempt, return_value):
            return False, None  # lost (pruned, released): the slot is no longer this job's
        following = _hand_on(claimed.job, then_claim, attempt.finished_at)
        if following is None:
            claimed.job.unblock_next_blocked_job()  # the slot back, the job to ready
    return True, following


def _hand_on(job: Job, then_claim: ClaimNext, now: datetime) -> ClaimedExecution | None:
    """Claim the key's next blocked job for the thread if it may take it; None: not done."""
    connection, process = db.connection(), then_claim.process
    key, queues = job.concurrency_key, tuple(then_claim.queues) or ("*",)
    params = [key, *_polled_params(queues), *_polled_params(queues, ready=True), key]
    with connection.cursor() as cursor:
        cursor.execute(_take_sql(_shapes(queues)), by_name(params))
        rows = cursor.fetchall()
        if not rows:
            return None
        expires_at = moment(now + job.concurrency_limit.expires_in, connection)
        cursor.execute(_renew_sql(), [expires_at, key])
        (following,) = jobs_from_rows(rows, [])
        process_id = None if process is None else process.pk
        created_at = moment(now, connection)
        cursor.execute(_claim_sql(), [following.pk, process_id, created_at])
    return ClaimedExecution.claimed_for(following, process, now)


def _shapes(queues: tuple[str, ...]) -> tuple[str, ...]:
    """How each of the worker's queue entries matches: every queue, a prefix, or a name."""
    if "*" in queues:
        return ("*",)
    return tuple("prefix" if "*" in entry else "name" for entry in queues)


def _polled_params(queues: tuple[str, ...], *, ready: bool = False) -> list:
    """The parameters of _take_sql's test of the job's queue, or (``ready``) of the ready rows."""
    if "*" in queues:
        return []
    params: list = []
    for entry in queues:
        if "*" in entry:
            prefix = entry.removesuffix("*")  # as QueueSelector matches a wildcard
            params += [len(prefix), prefix, prefix] if ready else [len(prefix), prefix]
        else:
            params.append(entry)
    return params


@functools.cache
def _take_sql(shapes: tuple[str, ...]) -> str:
    blocked, ready = table(BlockedExecution), table(ReadyExecution)
    quote = db.connection().ops.quote_name
    if shapes == ("*",):
        polled, ready_polled = "1", f"EXISTS (SELECT 1 FROM {ready})"
    else:
        polled = " OR ".join(
            f"substr({blocked}.queue_name, 1, %s) = %s"
            if shape == "prefix"
            else f"{blocked}.queue_name = %s"
            for shape in shapes
        )
        # A prefix: the first ready queue name from it on (an index seek) starts with it or
        # none does. IS: no row at all is NULL, which matches nothing.
        ready_polled = " OR ".join(
            f"(SELECT substr(queue_name, 1, %s) FROM {ready} WHERE queue_name >= %s "
            "ORDER BY queue_name LIMIT 1) IS %s"
            if shape == "prefix"
            else f"EXISTS (SELECT 1 FROM {ready} WHERE queue_name = %s)"
            for shape in shapes
        )
    return named(
        f"DELETE FROM {blocked} WHERE job_id = (SELECT job_id FROM {blocked} "
        "WHERE concurrency_key = %s ORDER BY priority DESC, job_id LIMIT 1) "
        f"AND ({polled}) "
        f"AND NOT EXISTS (SELECT 1 FROM {table(Pause)} p "
        f"WHERE p.queue_name = {blocked}.queue_name) "
        # Ready jobs of the polled queues come first, in poll order (models.execution.slot_hand_on).
        f"AND NOT ({ready_polled}) "
        # The key's slots: not expired (no row), not over the limit (a negative value).
        f"AND EXISTS (SELECT 1 FROM {table(Semaphore)} WHERE {quote('key')} = %s "
        f"AND {quote('value')} >= 0) "
        f"RETURNING {job_columns(f'{blocked}.job_id')}"
    )


@functools.cache
def _renew_sql() -> str:
    quote = db.connection().ops.quote_name
    return f"UPDATE {table(Semaphore)} SET expires_at = %s WHERE {quote('key')} = %s"


@functools.cache
def _claim_sql() -> str:
    return (
        f"INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
        "VALUES (%s, %s, %s)"
    )
