"""What one run of a durable task has done so far: names used, sleeps counted, records read.

``steady_queue.durable`` keeps it per job id while the job runs; ``perform`` forgets it
as every run ends, so a run never sees the names of the run before. A
job runs on one thread at a time: no lock is needed around one job's state.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..exceptions import DurableStepError

if TYPE_CHECKING:
    from ..models import JobStep

_runs: dict[int, DurableRun] = {}


@dataclasses.dataclass
class DurableRun:
    """The durable calls of the job's current run."""

    job_id: int
    used: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    sleeps: int = 0
    # The job's JobStep rows by (kind, name), read once on the run's first durable call.
    records: dict[tuple[str, str], JobStep] | None = None

    def use(self, kind: str, name: str, what: str) -> None:
        """Take ``name`` for this run; a name used twice raises (nothing is recorded)."""
        if (kind, name) in self.used:
            raise DurableStepError(
                f"{what} {name!r} is used twice in one run of job {self.job_id}: names "
                "must be unique per run."
            )
        self.used.add((kind, name))

    def record(self, kind: str, name: str) -> JobStep | None:
        """The stored record of the call (None: not recorded yet); one query per run."""
        if self.records is None:
            from ..models import JobStep

            rows = JobStep.objects.filter(job_id=self.job_id)
            self.records = {(row.kind, row.name): row for row in rows}
        return self.records.get((kind, name))

    def remember(self, row: JobStep) -> None:
        """A record written in this run (so that the run's records stay whole)."""
        if self.records is not None:
            self.records[(row.kind, row.name)] = row


def of(job_id: int) -> DurableRun:
    """The durable state of the current run of job ``job_id``."""
    run = _runs.get(job_id)
    if run is None:
        run = _runs[job_id] = DurableRun(job_id)
    return run


def forget(job_id: int) -> None:
    """Drop what a run of ``job_id`` did (as it ends)."""
    _runs.pop(job_id, None)
