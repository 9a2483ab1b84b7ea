"""MySQL/MariaDB's statements of a finish and a claim, as a script runs them (``script``).

A finish deletes the claim first (its row lock decides who records the outcome) and
updates the job only if that delete took the row (``TAKEN``). A claim locks the best
ready rows with ``FOR UPDATE SKIP LOCKED`` and keeps their ids in a session variable (a
JSON array, ``PICKED``) that its insert, delete and job select read through
``JSON_TABLE``. The group finish (``grouped``) and the hand-on (``hand_on``) build on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone

from ... import db
from ...models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from ..sql import columns, poll_order, table
from . import script
from .script import Statement

if TYPE_CHECKING:
    from collections.abc import Callable

# The ids picked by a claim, kept by the server between the script's statements.
PICKED = "@steady_queue_picked"
# Whether a finish's delete took the claim (1) or found it gone (0).
TAKEN = "@steady_queue_taken"


def success_values(claimed: ClaimedExecution, attempt, return_value) -> tuple:
    """A success's finish time, return value and attempts (all of them: MySQL has no
    append), prepared for the database."""
    connection, fields = db.connection(), Job._meta
    attempts = [*claimed.job.attempts, attempt.to_dict()]  # as Success.store writes them
    return (
        connection.ops.adapt_datetimefield_value(attempt.finished_at),
        fields.get_field("return_value").get_db_prep_save(return_value, connection),
        fields.get_field("attempts").get_db_prep_save(attempts, connection),
    )


def finishing(claimed: ClaimedExecution, values: tuple) -> list[Statement]:
    """Delete the claim if it is still ours, then mark its job finished if it was.

    The delete's row lock makes a concurrent recorder (a supervisor failing the claim)
    wait until commit, then find no row: the outcome is recorded once.
    """
    now, return_value, attempts = values  # from success_values
    mine = "process_id IS NULL" if claimed.process_id is None else "process_id = %s"
    return [
        (
            f"DELETE FROM {table(ClaimedExecution)} WHERE job_id = %s AND {mine}",
            [claimed.job_id, *([] if claimed.process_id is None else [claimed.process_id])],
        ),
        (f"SET {TAKEN} = ROW_COUNT()", []),
        (
            f"UPDATE {table(Job)} SET finished_at = %s, return_value = %s, attempts = %s, "
            f"updated_at = %s WHERE id = %s AND {TAKEN} = 1",
            [now, return_value, attempts, now, claimed.job_id],
        ),
    ]


def claiming(
    queue_name: str | None, limit: int, process: Process | None
) -> tuple[list[Statement], Callable[[list[script.Result]], list[ClaimedExecution]]]:
    """The statements that claim, and what reads their results into claimed executions.

    Make room for the ids, lock the best ready rows and keep their ids, then insert
    their claims, delete them and select their jobs. ``process`` claims only while its
    row exists (a pruned one claims nothing more; see Process.row_exists).
    """
    now = timezone.now()
    where, params = _claimable(queue_name, process)
    created_at = db.connection().ops.adapt_datetimefield_value(now)
    statements = [
        # MariaDB builds JSON_ARRAYAGG on GROUP_CONCAT, cut at group_concat_max_len (1 MB
        # by default, but a server may set less): room for the ids, 20 digits at most.
        (
            "SET SESSION group_concat_max_len = GREATEST(@@group_concat_max_len, %s)",
            [int(limit) * 21 + 2],
        ),
        (
            f"SELECT JSON_ARRAYAGG(job_id) INTO {PICKED} FROM (SELECT job_id "
            f"FROM {table(ReadyExecution)} WHERE {where} ORDER BY {poll_order()} LIMIT %s "
            "FOR UPDATE SKIP LOCKED) picked",
            [*params, limit],
        ),
        (
            f"INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
            f"SELECT id, %s, %s FROM {_picked()}",
            [process.pk if process else None, created_at],
        ),
        (
            f"DELETE ready FROM {_picked()} {by_id(ReadyExecution, 'ready')} "
            "ON ready.job_id = picked.id",
            [],
        ),
        (
            f"SELECT {columns(script.job_fields(), 'job.')} FROM {_picked()} "
            f"{by_id(Job, 'job')} ON job.id = picked.id",
            [],
        ),
    ]

    def read(results: list[script.Result]) -> list[ClaimedExecution]:
        jobs = script.jobs_from_rows(results[len(statements) - 1].rows)
        # The batch was taken in POLL_ORDER; its jobs start together, handed to threads
        # by priority then id (fair_order is not read back: they start at the same time).
        ordered = sorted(jobs.values(), key=lambda job: (-job.priority, job.pk))
        return [ClaimedExecution.claimed_for(job, process, now) for job in ordered]

    return statements, read


def _claimable(queue_name: str | None, process: Process | None) -> tuple[str, list]:
    """The WHERE of the ready rows a claim may take, and its parameters."""
    where, params = f"NOT EXISTS (SELECT 1 FROM {table(Pause)})", []
    if queue_name is not None:  # the pauses: a one-time filter, the index scan unchanged
        where = (
            f"queue_name = %s AND NOT EXISTS (SELECT 1 FROM {table(Pause)} WHERE queue_name = %s)"
        )
        params = [queue_name, queue_name]
    if process is not None:  # a one-time filter too
        where += f" AND EXISTS (SELECT 1 FROM {table(Process)} WHERE id = %s)"
        params.append(process.pk)
    return where, params


def _picked() -> str:
    return f"JSON_TABLE({PICKED}, '$[*]' COLUMNS (id BIGINT PATH '$')) picked"


def by_id(model, alias: str) -> str:
    """Join ``model`` after the picked ids, by primary key, whatever the statistics say.

    On a table the optimizer believes tiny (new, or just emptied) it would scan it first,
    and the delete's scan would wait for the rows other claims locked: two claims
    waiting for each other's rows deadlock.
    """
    return f"STRAIGHT_JOIN {table(model)} {alias} FORCE INDEX (PRIMARY)"
