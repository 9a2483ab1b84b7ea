"""Several threads' successes, and their next claims, in one transaction on MySQL/MariaDB.

Each finish alone is a transaction, and InnoDB flushes its redo log at every commit.
When the threads of a worker finish at the same moment, the one that leads
(``finish_group``) sends one script for all of them: lock the claims that are still
the process's and keep their ids, delete them, mark those jobs finished (each with its
own attempts and return value), then claim as many jobs as threads asked for, and
return which jobs were finished.

Exactly once, as alone: a job is marked finished in the transaction that deleted its
claim, the claims are locked first (in primary-key order, as every finish locks
them), and a claim that is no longer the process's finishes nothing.
"""

from __future__ import annotations

import json

from ...models import ClaimedExecution, Job
from ..finish_group import Finishing, Shape
from ..sql import table
from . import script
from .script import COMMIT, START, Statement
from .statements import by_id
from .statements import claiming as claiming_of

# The ids of the group's claims that were still the process's, kept between statements.
TAKEN = "@steady_queue_taken_ids"


def write(shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list]]:
    """Finish ``entries`` in one script; for each, (recorded, the jobs it claimed)."""
    finishing = _finishing(shape, entries)
    wanted = sum(entry.claims for entry in entries) if shape.claims else 0
    claiming, read = claiming_of(shape.queue_name, wanted, shape.process) if wanted else ([], None)
    results = script.run([START, *finishing, *claiming, COMMIT])
    finished = set(json.loads(results[len(finishing)].rows[0][0] or "[]"))
    claimed = iter(read(results[1 + len(finishing) :]) if read else [])
    return [
        (entry.job_id in finished, [c for c in [next(claimed, None)] if c] if entry.claims else [])
        for entry in entries
    ]


def _finishing(shape: Shape, entries: list[Finishing]) -> list[Statement]:
    """Lock the claims still the process's and keep their ids, delete them, mark their
    jobs finished (each with its own values), and select the ids (the last statement)."""
    ids = [entry.job_id for entry in entries]
    mine = "process_id IS NULL" if shape.process_id is None else "process_id = %s"
    taken = f"JSON_TABLE({TAKEN}, '$[*]' COLUMNS (id BIGINT PATH '$')) taken"
    marks = ", ".join(["%s"] * len(ids))
    cases = " ".join(["WHEN %s THEN %s"] * len(entries))
    return [
        (
            f"SELECT JSON_ARRAYAGG(job_id) INTO {TAKEN} FROM (SELECT job_id "
            f"FROM {table(ClaimedExecution)} WHERE job_id IN ({marks}) AND {mine} "
            "ORDER BY job_id FOR UPDATE) mine",
            [*ids, *([] if shape.process_id is None else [shape.process_id])],
        ),
        (
            f"DELETE claim FROM {taken} {by_id(ClaimedExecution, 'claim')} "
            "ON claim.job_id = taken.id",
            [],
        ),
        (
            f"UPDATE {taken} {by_id(Job, 'job')} ON job.id = taken.id "
            f"SET job.finished_at = CASE job.id {cases} END, "
            f"job.updated_at = CASE job.id {cases} END, "
            f"job.return_value = CASE job.id {cases} END, "
            f"job.attempts = CASE job.id {cases} END",
            [
                value
                for column in ("finished_at", "finished_at", "return_value", "attempts")
                for entry in entries
                for value in (entry.job_id, getattr(entry, column))
            ],
        ),
        (f"SELECT {TAKEN}", []),
    ]
