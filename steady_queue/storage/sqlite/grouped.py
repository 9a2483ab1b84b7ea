"""Several threads' successes, and their next claims, in one write transaction on SQLite.

SQLite has one writer: the threads of a worker that finish at the same moment would
each wait for the write lock (the busy handler sleeps a millisecond and more at each
try) to write a few rows. Grouped (``finish_group``), one thread of the process writes
at a time, whatever its neighbours do: the leader's transaction deletes each claim
that is still the process's and marks its job finished, then claims as many jobs as
threads asked for, in one statement.

Exactly once, as alone: a job is marked finished in the transaction that deleted its
claim, and a claim that is no longer the process's finishes nothing.
"""

from __future__ import annotations

from ..finish_group import Finishing, Shape
from . import claim
from .success import finish_job
from .transaction import write_transaction


def write(shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list]]:
    """Finish ``entries`` in one transaction; for each, (recorded, the jobs it claimed)."""
    wanted = sum(entry.claims for entry in entries) if shape.claims else 0
    queues = ["*"] if shape.queue_name is None else [shape.queue_name]
    with write_transaction():
        finished = [
            finish_job(
                entry.job_id,
                shape.process_id,
                entry.finished_at,
                entry.return_value,
                entry.attempts,
            )
            for entry in entries
        ]
        claimed = iter(claim.claim(queues, wanted, shape.process) if wanted else [])
    return [
        (recorded, [c for c in [next(claimed, None)] if c] if entry.claims else [])
        for recorded, entry in zip(finished, entries, strict=True)
    ]
