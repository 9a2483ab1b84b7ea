"""The hot paths in one round trip each on MySQL/MariaDB: enqueue, claim and finish a job.

The ORM needs a Django transaction for each: ``SET autocommit=0``, two to five
statements, ``COMMIT`` and ``SET autocommit=1``, every one a round trip. Here each is
one transaction sent as one script (``mysql_script``), with the same effect and the
same locking as the portable path it replaces: the claim locks the best ready rows
with ``FOR UPDATE SKIP LOCKED`` and keeps their ids in a session variable (a JSON
array) that the claim's insert, delete and job select read through ``JSON_TABLE``;
the finish deletes the claim first (its row lock decides who records the outcome) and
updates the job only if that delete took the row. The uncommon cases (scheduled,
concurrency-limited or unique jobs, failures) and any call inside a transaction take
the portable paths; a concurrency-limited job's success, with its slot's hand-on, is
in mysql_hand_on.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from .. import db
from ..models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from ..models.claimed_finish import Outcome, Success
from . import mysql_enqueue, mysql_script
from .base import ClaimNext, Finished, Storage
from .finish_group import FinishGroups, Finishing, claimed_along, shape_of
from .mysql_script import COMMIT, START, Statement
from .sql import claim_per_queue, columns, poll_order, table

if TYPE_CHECKING:
    from ..models.attempt import Attempt

# The ids picked by a claim, kept by the server between the script's statements.
PICKED = "@steady_queue_picked"
# Whether a finish's delete took the claim (1) or found it gone (0).
TAKEN = "@steady_queue_taken"


class MysqlStorage(Storage):
    """One round trip per enqueue, claim and finish (with the next claim)."""

    #: Nothing wakes a MySQL worker: left at the default polling_interval (0.1 s) an idle
    #: one polls every 30 ms (a poll that finds nothing: one round trip, a read-only
    #: transaction), so that a job waits about 15 ms for it instead of 50.
    idle_polling_interval = 0.03

    def __init__(self, alias: str):
        super().__init__(alias)
        from . import mysql_grouped  # it builds on this module's statements

        self._groups = FinishGroups(mysql_grouped.write)

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        # A unique job's key is taken through the ORM (UniqueLock): the portable path.
        fast = all(job.is_ready_on_enqueue and not job.unique_key for job in jobs)
        if not (jobs and fast and mysql_script.usable()):
            return super().enqueue(jobs)
        if len(jobs) == 1:
            db.retry_deadlocks(lambda: mysql_enqueue.enqueue_ready(jobs[0]))
            return jobs
        if db.retry_deadlocks(lambda: mysql_enqueue.enqueue_all_ready(jobs)):
            return jobs
        return super().enqueue(jobs)  # the ids would not be consecutive

    def claim(
        self, queues: Sequence[str], limit: int, process: Process | None
    ) -> list[ClaimedExecution]:
        """Claim as the portable storage does, with the pauses checked in each script.

        While nothing is paused, a poll of ``*`` is one round trip, and a poll of exact
        queue names one per queue. Wildcards, or ``*`` with paused queues, take the
        selector's DISTINCT over the ready queues first.
        """
        if not mysql_script.usable():
            return super().claim(queues, limit, process)
        return claim_per_queue(queues, limit, lambda name, n: _claim_from(name, n, process))

    def finish(
        self, claimed: ClaimedExecution, outcome: Outcome, *, then_claim: ClaimNext | None = None
    ) -> Finished:
        """A plain success in one round trip, which also claims the next job when asked."""
        from . import mysql_hand_on  # it builds on this module's statements

        if mysql_hand_on.applies(claimed, outcome, then_claim):
            return mysql_hand_on.finish(self, claimed, outcome, then_claim)
        plain = isinstance(outcome, Success) and outcome.hands_nothing_on(claimed)
        if not (plain and mysql_script.usable()):
            return super().finish(claimed, outcome, then_claim=then_claim)
        along = claimed_along(then_claim)
        # A worker thread's finish may share a script with its neighbours' (see
        # mysql_grouped); not inside a caller's transaction, which is its own.
        shape = shape_of(claimed, then_claim, along)
        asked: list[bool] = []  # along.allowed()'s one answer
        made: list[list[ClaimedExecution]] = []  # what the script claimed

        def write(attempt: Attempt) -> bool:
            finishing = _finishing(claimed, attempt, outcome.return_value)

            def alone(claims: bool) -> tuple[bool, list[ClaimedExecution]]:
                if not claims:
                    results = mysql_script.run([START, *finishing, COMMIT])
                    return results[1].rowcount == 1, []
                queue_name = None if "*" in along.queues else along.queues[0]
                claiming, read = _claiming(queue_name, along.limit, along.process)
                results = mysql_script.run([START, *finishing, *claiming, COMMIT])
                return results[1].rowcount == 1, read(results[1 + len(finishing) :])

            if asked:  # retried after a failure: finish only, alone
                return alone(False)[0]
            asked.append(along is not None and along.allowed())
            _, _, (_, (finished_at, return_value, attempts, *_)) = finishing
            entry = Finishing(
                claimed.job_id,
                finished_at,
                return_value,
                attempts,
                claims=asked[0],
                alone=functools.partial(alone, asked[0]),
            )
            recorded, claimed_next = self._groups.finish(shape, entry)
            if asked[0]:
                made.append(claimed_next)
            return recorded

        recorded = claimed.record(outcome, write=write)
        if along is None:
            claimed_next, failed = self.claim_next(then_claim)
            return Finished(recorded, claimed_next, failed)
        if asked and asked[0]:
            # Asked and made, or asked and failed (it may have claimed all the same).
            return Finished(recorded, made[0] if made else None, claim_failed=not made)
        return Finished(recorded)


def _finishing(claimed: ClaimedExecution, attempt: Attempt, return_value: Any) -> list[Statement]:
    """Delete the claim if it is still ours, then mark its job finished if it was.

    The delete's row lock makes a concurrent recorder (a supervisor failing the claim)
    wait until commit, then find no row: the outcome is recorded once.
    """
    connection, fields = db.connection(), Job._meta
    now = connection.ops.adapt_datetimefield_value(attempt.finished_at)
    attempts = [*claimed.job.attempts, attempt.to_dict()]  # as Success.store writes them
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
            [
                now,
                fields.get_field("return_value").get_db_prep_save(return_value, connection),
                fields.get_field("attempts").get_db_prep_save(attempts, connection),
                now,
                claimed.job_id,
            ],
        ),
    ]


def _claim_from(
    queue_name: str | None, limit: int, process: Process | None
) -> tuple[list[ClaimedExecution], bool]:
    """Claim from one queue (None: all, unless a queue is paused); and whether one is."""
    claiming, read = _claiming(queue_name, limit, process)
    if queue_name is not None:
        return read(mysql_script.run([START, *claiming, COMMIT])[1:]), False
    paused = (f"SELECT EXISTS (SELECT 1 FROM {table(Pause)})", [])
    results = mysql_script.run([START, paused, *claiming, COMMIT])
    return read(results[2:]), bool(results[1].rows[0][0])


def _claiming(queue_name: str | None, limit: int, process: Process | None):
    """The statements that claim, and what reads their results into claimed executions.

    Make room for the ids, lock the best ready rows and keep their ids, then insert
    their claims, delete them and select their jobs. ``process`` claims only while its
    row exists (a pruned one claims nothing more; see Process.row_exists).
    """
    now = timezone.now()
    where, params = f"NOT EXISTS (SELECT 1 FROM {table(Pause)})", []
    if queue_name is not None:  # the pauses: a one-time filter, the index scan unchanged
        where = (
            f"queue_name = %s AND NOT EXISTS (SELECT 1 FROM {table(Pause)} WHERE queue_name = %s)"
        )
        params = [queue_name, queue_name]
    if process is not None:  # a one-time filter too
        where += f" AND EXISTS (SELECT 1 FROM {table(Process)} WHERE id = %s)"
        params.append(process.pk)
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
            f"DELETE ready FROM {_picked()} {_by_id(ReadyExecution, 'ready')} "
            "ON ready.job_id = picked.id",
            [],
        ),
        (
            f"SELECT {columns(mysql_script.job_fields(), 'job.')} FROM {_picked()} "
            f"{_by_id(Job, 'job')} ON job.id = picked.id",
            [],
        ),
    ]

    def read(results: list[mysql_script.Result]) -> list[ClaimedExecution]:
        jobs = mysql_script.jobs_from_rows(results[len(statements) - 1].rows)
        ordered = sorted(jobs.values(), key=lambda job: (-job.priority, job.pk))  # POLL_ORDER
        return [ClaimedExecution.claimed_for(job, process, now) for job in ordered]

    return statements, read


def _picked() -> str:
    return f"JSON_TABLE({PICKED}, '$[*]' COLUMNS (id BIGINT PATH '$')) picked"


def _by_id(model, alias: str) -> str:
    """Join ``model`` after the picked ids, by primary key, whatever the statistics say.

    On a table the optimizer believes tiny (new, or just emptied) it would scan it first,
    and the delete's scan would wait for the rows other claims locked: two claims
    waiting for each other's rows deadlock.
    """
    return f"STRAIGHT_JOIN {table(model)} {alias} FORCE INDEX (PRIMARY)"
