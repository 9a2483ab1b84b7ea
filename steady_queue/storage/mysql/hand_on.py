"""A limited job's success and its slot's hand-on in one round trip on MySQL/MariaDB.

The portable finish of a job with a concurrency limit hands its slot on with about ten
statements (``models.execution.slot_hand_on``), each a round trip, and its key's slot stands idle
for all of them. Here one script (``script``) does the same transaction: delete
the claim, mark the job finished, lock the next blocked job of the key, and when the
finishing thread would have claimed it next (its queue polled and not paused, no ready
job of the polled queues, the key not over its limit) renew the semaphore and move that
job from blocked to claimed for the thread. When the slot cannot pass that way, the
same script gives it back and moves the next blocked job to ready, as
``Job.unblock_next_blocked_job`` does (``Semaphore.signal``, then
``BlockedExecution.release_one``). Every step after the claim's delete is guarded by
session variables, so a lost claim changes nothing, and the whole script commits or
rolls back as one.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ... import db
from ...models import BlockedExecution, ClaimedExecution, Job, Pause, ReadyExecution, Semaphore
from ...models.execution import READY_COPIED_FIELDS
from ..base import ClaimNext
from ..sql import columns, table
from . import script
from .script import COMMIT, START, Statement
from .statements import TAKEN, finishing, success_values

if TYPE_CHECKING:
    from ...models.attempt import Attempt

NEXT, NEXT_QUEUE = "@steady_queue_next", "@steady_queue_next_queue"  # the first blocked job
HAND = "@steady_queue_hand"  # 1: the slot passes to NEXT, claimed for the finishing thread
BACK = "@steady_queue_back"  # 1: the slot goes back (the claim was ours, no hand-on)
RELEASE = "@steady_queue_release"  # the blocked job the given-back slot may admit to ready
ADMITTED = "@steady_queue_admitted"  # 1: RELEASE took a slot and goes to ready


def finish_and_hand_on(
    claimed: ClaimedExecution, attempt: Attempt, return_value: Any, then_claim: ClaimNext
) -> tuple[bool, ClaimedExecution | None]:
    """Record a success; (whether it was ours, the job its slot passed to, claimed)."""
    values = success_values(claimed, attempt, return_value)
    finishing_statements = finishing(claimed, values)
    handing, read = _handing_on(claimed.job, then_claim)
    results = script.run([START, *finishing_statements, *handing, COMMIT])
    handed = read(results[1 + len(finishing_statements) :])
    return results[1].rowcount == 1, handed[0] if handed else None


def _handing_on(job: Job, then_claim: ClaimNext):
    """The statements after the finish's (which set ``@steady_queue_taken``), and a reader."""
    key, limit, now = job.concurrency_key, job.concurrency_limit, timezone.now()
    connection = db.connection()
    expires_at = connection.ops.adapt_datetimefield_value(now + limit.expires_in)
    created_at = connection.ops.adapt_datetimefield_value(now)
    process = then_claim.process
    queues = list(then_claim.queues) or ["*"]
    exact = [] if "*" in queues else [q for q in queues if "*" not in q]
    prefixes = [] if "*" in queues else [q.removesuffix("*") for q in queues if "*" in q]
    likes = [connection.ops.prep_for_like_query(p) + "%" for p in prefixes]
    sql = _sql("*" in queues, len(exact), len(prefixes))
    params = [  # each statement's of _sql, in order
        [key],
        [*exact, *prefixes, *exact, *likes],
        [expires_at, key],
        [],
        [],
        [process.pk if process else None, created_at],
        [],
        [],
        [limit.to, expires_at, key, limit.to],
        [key],
        [expires_at, key],
        [],
        [key, limit.to - 1, expires_at, created_at, created_at, key],
        [],
        [created_at],
        [],
    ]
    statements: list[Statement] = list(zip(sql, params, strict=True))
    if connection.mysql_is_mariadb:
        statements[_GIVING_BACK:] = [_only_when_given_back(statements[_GIVING_BACK:])]

    def read(results: list[script.Result]) -> list[ClaimedExecution]:
        jobs = script.jobs_from_rows(results[_SELECT_HANDED].rows)
        return [ClaimedExecution.claimed_for(each, process, now) for each in jobs.values()]

    return statements, read


_SELECT_HANDED = 6  # the index of the statement that reads the handed job
_GIVING_BACK = 8  # the first statement that gives the slot back


def _only_when_given_back(statements: list[Statement]) -> Statement:
    """The statements that give the slot back, run only when it goes back (MariaDB).

    Each is guarded by its variables already, but a handed-on slot (the common case)
    still paid for parsing and running eight no-ops, about 0.3 ms: MariaDB's anonymous
    block skips them in one test. (MySQL has no anonymous blocks: it runs them all.)
    """
    body = "; ".join(sql for sql, _ in statements)
    params = [param for _, each in statements for param in each]
    return f"BEGIN NOT ATOMIC IF {BACK} THEN {body}; END IF; END", params


@functools.cache
def _sql(everything: bool, exact: int, prefixes: int) -> list[str]:
    return [*_handing_sql(everything, exact, prefixes), *_giving_back_sql()]


def _handing_sql(everything: bool, exact: int, prefixes: int) -> list[str]:
    """Lock the key's first blocked job; if this thread takes it, keep the slot taken and
    claim the job for the thread, and select it."""
    key = db.connection().ops.quote_name("key")
    blocked, semaphores, ready = table(BlockedExecution), table(Semaphore), table(ReadyExecution)
    # Which queues the thread polls: its entries as the worker reads them (exact names
    # compared as Python does; ``prefix*`` a prefix), and the ready jobs among them as
    # the ORM selects them (models.execution.slot_hand_on).
    polled = " OR ".join(
        [f"{NEXT_QUEUE} = BINARY %s"] * exact + [f"LOCATE(BINARY %s, {NEXT_QUEUE}) = 1"] * prefixes
    )
    ready_polled = " OR ".join(
        ["queue_name = %s"] * exact + ["queue_name LIKE BINARY %s"] * prefixes
    )
    if everything:
        polled = ready_polled = "TRUE"
    return [
        # The first blocked job of the key, locked (skipping another finish's pick). An
        # aggregate always returns a row: the variables are set even when none is found.
        f"SELECT MAX(job_id), MAX(queue_name) INTO {NEXT}, {NEXT_QUEUE} FROM (SELECT job_id, "
        f"queue_name FROM {blocked} WHERE concurrency_key = %s AND {TAKEN} = 1 "
        "ORDER BY priority DESC, job_id LIMIT 1 FOR UPDATE SKIP LOCKED) top",
        # Whether this thread would have claimed it next.
        f"SET {HAND} = COALESCE({NEXT} IS NOT NULL AND ({polled}) AND NOT EXISTS "
        f"(SELECT 1 FROM {table(Pause)} WHERE queue_name = {NEXT_QUEUE}) AND NOT EXISTS "
        f"(SELECT 1 FROM {ready} WHERE {ready_polled}), 0)",
        # The slot stays taken, for the next holder (Semaphore.extend).
        f"UPDATE {semaphores} SET expires_at = %s WHERE {key} = %s AND value >= 0 AND {HAND}",
        f"SET {HAND} = {HAND} AND ROW_COUNT() > 0",
        f"DELETE FROM {blocked} WHERE job_id = {NEXT} AND {HAND}",
        f"INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
        f"SELECT {NEXT}, %s, %s FROM DUAL WHERE {HAND}",
        f"SELECT {columns(script.job_fields())} FROM {table(Job)} WHERE id = {NEXT} AND {HAND}",
    ]


def _giving_back_sql() -> list[str]:
    """Where the slot was not handed on, give it back (Semaphore.signal) and move the
    key's next blocked job to ready if it takes the slot then."""
    key = db.connection().ops.quote_name("key")
    blocked, semaphores, ready = table(BlockedExecution), table(Semaphore), table(ReadyExecution)
    return [
        # Otherwise the slot goes back (Semaphore.signal) ...
        f"SET {BACK} = {TAKEN} = 1 AND NOT {HAND}",
        f"UPDATE {semaphores} SET value = LEAST(value + 1, %s), expires_at = %s "
        f"WHERE {key} = %s AND value < %s AND {BACK}",
        # ... and the next blocked job takes it and goes to ready, if it can
        # (BlockedExecution.release_one, Semaphore.wait).
        f"SELECT MAX(job_id) INTO {RELEASE} FROM (SELECT job_id FROM {blocked} "
        f"WHERE concurrency_key = %s AND {BACK} ORDER BY priority DESC, job_id LIMIT 1 "
        "FOR UPDATE SKIP LOCKED) top",
        f"UPDATE {semaphores} SET value = value - 1, expires_at = %s "
        f"WHERE {key} = %s AND value > 0 AND {RELEASE} IS NOT NULL",
        f"SET {ADMITTED} = ROW_COUNT() > 0",
        # The key's row expired and was deleted: a new one, with the slot taken. IGNORE:
        # another transaction created it first, and the job stays blocked.
        f"INSERT IGNORE INTO {semaphores} ({key}, value, expires_at, created_at, updated_at) "
        f"SELECT %s, %s, %s, %s, %s FROM DUAL WHERE {RELEASE} IS NOT NULL AND NOT {ADMITTED} "
        f"AND NOT EXISTS (SELECT 1 FROM {semaphores} WHERE {key} = %s)",
        f"SET {ADMITTED} = {ADMITTED} OR ROW_COUNT() > 0",
        f"INSERT INTO {ready} (job_id, {', '.join(READY_COPIED_FIELDS)}, created_at) "
        f"SELECT id, {', '.join(READY_COPIED_FIELDS)}, %s FROM {table(Job)} "
        f"WHERE id = {RELEASE} AND {ADMITTED}",
        f"DELETE FROM {blocked} WHERE job_id = {RELEASE} AND {ADMITTED}",
    ]
