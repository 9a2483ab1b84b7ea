"""Ending a job whose run could not record its outcome: never by handing it back.

``perform`` records every outcome itself and retries connection errors while doing so.
What escapes a run anyway (a query of the run's own, made while a database restart cut
its connection) leaves the job claimed although it ran: given back to ready as a claim
"lost track of", or with the worker's other claims when it stops, it would run again.
Instead the thread that ran it fails it with what escaped (the task's own error is
that error's context, in the stored traceback), once the database answers again.
"""

from __future__ import annotations

import logging

from ...models import ClaimedExecution
from ...models.execution.claimed_finish import Failure, OutcomeNotRecorded
from ...observability.log import claim_fields
from ..outages import close_connections

logger = logging.getLogger("steady_queue.processes")


def end_unrecorded(claimed: ClaimedExecution, exc: BaseException, process_name: str) -> bool:
    """Fail ``claimed``'s job with ``exc`` (its retry policy applies); whether it ended.

    False: the claim stays as it is, for the crash path or a prune to fail it
    (``OutcomeNotRecorded`` means the database stayed away past the alive threshold,
    which is when a supervisor prunes this process and fails its claims).
    """
    logger.error(
        "Could not record the outcome of job %s; failing it with %s",
        claimed.job_id,
        type(exc).__name__,
        exc_info=exc,
        extra=claim_fields(claimed, process_name=process_name),
    )
    if isinstance(exc, OutcomeNotRecorded):
        return False
    # Whatever broke this thread's connections, the failure is written on fresh ones.
    close_connections()
    try:
        claimed.record(Failure(exc))
    except Exception:
        logger.exception(
            "Could not record the failure of job %s either; it stays claimed",
            claimed.job_id,
            extra=claim_fields(claimed, process_name=process_name),
        )
        return False
    return True
