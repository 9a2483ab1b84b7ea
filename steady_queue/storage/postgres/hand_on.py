"""A limited job's success and its slot's hand-on in one statement on PostgreSQL.

The portable finish of a job with a concurrency limit hands its slot on with about ten
statements (``models.execution.slot_hand_on``): its job's key stands idle for all of them. Here
one statement deletes the claim, marks the job finished, locks the next blocked job of
the key, renews the semaphore, and moves that job from blocked to claimed for the
finishing thread, with the same locks as the portable hand-on. When the slot cannot
pass that way (no job blocked on the key, its queue not polled by this worker or paused,
a ready job of the polled queues first in line, the key over its limit or expired) the
same statement gives it back as ``Job.unblock_next_blocked_job`` does
(``Semaphore.signal``, then ``BlockedExecution.release_one``: the next blocked job takes
the slot and goes to ready, with its NOTIFY). One statement is atomic, so it runs in
autocommit: one round trip, where BEGIN, the statement and COMMIT were three.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ...models import BlockedExecution, ClaimedExecution, Job, Pause, ReadyExecution, Semaphore
from ..base import ClaimNext
from ..notify import READY_CHANNEL
from ..sql import columns, table
from .cursor import prepared_cursor
from .statements import (
    finish_params,
    finished_values,
    finishing,
    jobs_from_rows,
    nulls,
)

if TYPE_CHECKING:
    from ...models.attempt import Attempt


def finish_and_hand_on(
    claimed: ClaimedExecution, attempt: Attempt, return_value: Any, then_claim: ClaimNext
) -> tuple[bool, ClaimedExecution | None]:
    """Record a success; (whether it was ours, the job its slot passed to, claimed)."""
    job, process, now = claimed.job, then_claim.process, timezone.now()
    queues = list(then_claim.queues) or ["*"]
    matching = [] if "*" in queues else _queue_patterns(queues)
    params = finish_params(claimed, (attempt.finished_at, *finished_values(attempt, return_value)))
    params += [job.concurrency_key, *matching, *matching]
    limit, key = job.concurrency_limit, job.concurrency_key
    expires_at = now + limit.expires_in
    params += [expires_at, key]
    params += [process.pk if process else None, now]
    params += [key, limit.to, limit.to, expires_at, limit.to]  # the slot back
    params += [key, limit.to - 1, expires_at, now, now, limit.to]
    params += [now]
    with prepared_cursor() as cursor:
        cursor.execute(_sql(len(matching)), params)
        rows = cursor.fetchall()
    recorded = rows[0][0] == 1
    jobs = jobs_from_rows([row[2:] for row in rows if row[2] is not None])
    following = ClaimedExecution.claimed_for(jobs[0], process, now) if jobs else None
    return recorded, following


def _queue_patterns(queues: list[str]) -> list[str]:
    """LIKE patterns for the worker's queues: exact names, or prefixes for ``name*``."""
    escaped = [q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") for q in queues]
    pairs = zip(queues, escaped, strict=True)
    return [e.removesuffix("*") + "%" if "*" in q else e for q, e in pairs]


@functools.cache
def _sql(patterns: int) -> str:
    # One row, however it went: how many jobs finished (1 or 0), and the job handed on.
    fields = Job._meta.concrete_fields
    finished = "(SELECT count(*) FROM finished)"
    notified = f"(SELECT count(pg_notify('{READY_CHANNEL}', queue_name)) FROM readied)"
    return (
        f"WITH {finishing(False)}, {_handing_on(patterns)}, {_giving_back()} "
        f"SELECT {finished}, {notified}, {columns(fields, 'j.')} FROM handed "
        f"JOIN {table(Job)} j ON j.id = handed.job_id "
        f"UNION ALL SELECT {finished}, {notified}, {nulls(fields)} "
        "WHERE NOT EXISTS (SELECT FROM handed)"
    )


def _handing_on(patterns: int) -> str:
    """CTEs that lock the key's first blocked job (``top``) and, if this thread takes it,
    keep the slot taken and claim the job for the thread (``handed``)."""
    polled = " OR ".join(["top.queue_name LIKE %s"] * patterns) if patterns else "TRUE"
    # No ready job of the polled queues comes first (see models.execution.slot_hand_on).
    ready = " OR ".join(["r.queue_name LIKE %s"] * patterns) if patterns else "TRUE"
    blocked = table(BlockedExecution)
    return (
        # MATERIALIZED: the locking SELECT runs exactly once, never inlined twice.
        f"top AS MATERIALIZED (SELECT job_id, queue_name FROM {blocked} "
        "WHERE concurrency_key = %s AND EXISTS (SELECT FROM finished) "
        "ORDER BY priority DESC, job_id LIMIT 1 FOR UPDATE SKIP LOCKED), "
        f"taken AS MATERIALIZED (SELECT job_id FROM top WHERE ({polled}) AND NOT EXISTS "
        f"(SELECT FROM {table(Pause)} p WHERE p.queue_name = top.queue_name) AND NOT EXISTS "
        f"(SELECT FROM {table(ReadyExecution)} r WHERE {ready})), "
        f"slot AS (UPDATE {table(Semaphore)} SET expires_at = %s "
        "WHERE key = %s AND value >= 0 AND EXISTS (SELECT FROM taken) RETURNING key), "
        f"unblocked AS (DELETE FROM {blocked} b USING taken "
        "WHERE b.job_id = taken.job_id AND EXISTS (SELECT FROM slot) RETURNING b.job_id), "
        f"handed AS (INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
        "SELECT job_id, %s, %s FROM unblocked RETURNING job_id)"
    )


@functools.cache
def _giving_back() -> str:
    """CTEs that give the slot back where it was not handed on, and move ``top`` to ready
    if it takes the slot then (``readied``, its queue names to notify)."""
    semaphores, blocked = table(Semaphore), table(BlockedExecution)
    # Semaphore.signal's value: one slot more, never above the limit.
    signalled = "(CASE WHEN held.value < %s THEN held.value + 1 ELSE held.value END)"
    back = "EXISTS (SELECT FROM finished) AND NOT EXISTS (SELECT FROM slot)"
    return (
        # The key's row, locked: FOR UPDATE reads its latest value (an UPDATE's RETURNING
        # could not tell the value it replaced).
        f"held AS MATERIALIZED (SELECT key, value FROM {semaphores} WHERE key = %s AND {back} "
        "FOR UPDATE), "
        # The first blocked job takes the slot given back if one is free then (Semaphore.wait).
        f"released AS MATERIALIZED (SELECT top.job_id FROM top, held WHERE {signalled} > 0), "
        f"given AS (UPDATE {semaphores} s SET value = {signalled} - "
        "(SELECT count(*) FROM released), expires_at = %s FROM held "
        "WHERE s.key = held.key AND (held.value < %s OR EXISTS (SELECT FROM released)) "
        "RETURNING s.key), "
        # The key's row expired and was deleted: a new one, with the job's slot taken
        # (Semaphore._attempt_creation, a decrement if another made it first).
        f"created AS (INSERT INTO {semaphores} AS s (key, value, expires_at, created_at, "
        f"updated_at) SELECT %s, %s, %s, %s, %s WHERE {back} AND EXISTS (SELECT FROM top) "
        "AND NOT EXISTS (SELECT FROM held) ON CONFLICT (key) DO UPDATE SET value = s.value - 1, "
        "expires_at = EXCLUDED.expires_at WHERE s.value > 0 AND %s > 1 RETURNING s.key), "
        "admitted AS MATERIALIZED (SELECT job_id FROM top WHERE EXISTS (SELECT FROM released) "
        "OR EXISTS (SELECT FROM created)), "
        f"readied AS (INSERT INTO {table(ReadyExecution)} (job_id, queue_name, priority, "
        f"created_at) SELECT j.id, j.queue_name, j.priority, %s FROM admitted "
        f"JOIN {table(Job)} j ON j.id = admitted.job_id RETURNING queue_name), "
        f"unblocked_back AS (DELETE FROM {blocked} b USING admitted "
        "WHERE b.job_id = admitted.job_id RETURNING b.job_id)"
    )
