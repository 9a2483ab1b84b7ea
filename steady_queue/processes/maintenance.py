"""The supervisor's housekeeping: prune dead processes, fail orphaned and abandoned jobs."""

from __future__ import annotations

import logging

from ..models import ClaimedExecution, Process
from .errors import ProcessExitError

logger = logging.getLogger("steady_queue.processes")


def prune_dead_processes(excluding: Process) -> None:
    """Fail the jobs of processes whose heartbeat expired (on any host) and remove them."""
    Process.prune(excluding=excluding)


def fail_orphaned_executions() -> None:
    """Fail jobs still claimed by processes that no longer exist (e.g. their supervisor died)."""
    orphans = ClaimedExecution.orphaned()
    for process_id in set(orphans.values_list("process_id", flat=True)):
        error = ProcessExitError(f"Process {process_id} exited without finishing this job")
        if failed := ClaimedExecution.fail_all_with(orphans.filter(process_id=process_id), error):
            logger.warning("Failed %d jobs orphaned by process %s", failed, process_id)


def clean_up_after(supervisor: Process, name: str, error: ProcessExitError | None) -> None:
    """Deal with the row of the exited child ``name``, if it could not remove it itself.

    A child that died (``error``) fails its jobs; one that exited cleanly meant to stop,
    so its jobs go back to ready.
    """
    rows = Process.objects.filter(supervisor=supervisor, name=name)
    row = rows.first()
    if row is None:
        return
    if error is not None and (failed := row.fail_all_claimed_executions_with(error)):
        logger.warning("Failed %d jobs of %s: %s", failed, name, error)
    row.deregister(release_claims=error is None)
