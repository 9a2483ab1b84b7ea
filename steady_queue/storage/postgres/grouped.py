"""Several threads' successes, and their next claims, in one statement on PostgreSQL.

One statement per finished job is a commit per job: PostgreSQL's floor here is about
2,000 of them a second, whatever else is done. When the threads of a worker finish
at the same moment (a busy worker: the database is the slower side), the one that
leads (``finish_group``) writes all their finishes in one statement: the claims of the
jobs deleted, the jobs whose claim was deleted marked finished (each with its own
attempt and return value), and as many next jobs claimed as threads asked for.

Exactly once, as alone: a job is marked finished in the statement that deleted its
claim, and a claim that is no longer the process's (pruned, released) finishes
nothing; the statement is all or nothing for every job in it.
"""

from __future__ import annotations

import functools

from django.utils import timezone

from ...models import ClaimedExecution, Job
from .. import notify
from ..finish_group import Finishing, Shape
from ..sql import table
from .cursor import prepared_cursor
from .statements import claim_params, claimed_columns, claimed_jobs, claimed_joins, claiming, nulls


def write(shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list[ClaimedExecution]]]:
    """Finish ``entries`` in one statement; for each, (recorded, the jobs it claimed)."""
    wanted = sum(entry.claims for entry in entries)
    claims = shape.claims and wanted > 0
    params: list = [
        [entry.job_id for entry in entries],
        [entry.finished_at for entry in entries],
        [entry.return_value for entry in entries],
        [entry.attempts for entry in entries],
    ]
    params += [] if shape.process_id is None else [shape.process_id]
    now = timezone.now()
    if claims:
        params += claim_params(shape.queue_name, shape.process, wanted, now)
    registered = shape.process is not None
    sql = _sql(shape.process_id is None, claims, shape.queue_name is not None, registered)
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    finished = {row[0] for row in rows if row[0] is not None}
    claimed_rows = [row[1:] for row in rows if row[0] is None]
    jobs = claimed_jobs(shape.queue_name, claimed_rows, shape.process) if claims else []
    claimed = iter(ClaimedExecution.claimed_for(job, shape.process, now) for job in jobs)
    return [
        (entry.job_id in finished, [c for c in [next(claimed, None)] if c] if entry.claims else [])
        for entry in entries
    ]


@functools.cache
def _sql(without_process: bool, claims: bool, one_queue: bool, registered: bool) -> str:
    # Rows of finished jobs carry their id; rows of claimed jobs a NULL, then the job.
    fields = Job._meta.concrete_fields
    process = "c.process_id IS NULL" if without_process else "c.process_id = %s"
    sql = (
        "WITH input AS (SELECT * FROM unnest(%s::bigint[], %s::timestamptz[], %s::jsonb[], "
        "%s::jsonb[]) AS i (job_id, finished_at, return_value, attempt)), "
        f"claim AS (DELETE FROM {table(ClaimedExecution)} c USING input "
        f"WHERE c.job_id = input.job_id AND {process} RETURNING c.job_id), "
        f"finished AS (UPDATE {table(Job)} j SET finished_at = i.finished_at, "
        "return_value = i.return_value, attempts = j.attempts || i.attempt, "
        "updated_at = i.finished_at FROM claim JOIN input i ON i.job_id = claim.job_id "
        f"WHERE j.id = claim.job_id RETURNING j.id, {notify.ended_call('j.id')})"
    )
    if not claims:
        return f"{sql} SELECT id, {nulls(fields)} FROM finished"
    return (
        f"{sql}, {claiming(one_queue, registered)} "
        f"SELECT id, {nulls(fields)}, NULL FROM finished UNION ALL "
        f"SELECT NULL, {claimed_columns()} FROM claimed {claimed_joins()}"
    )
