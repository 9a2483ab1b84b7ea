"""A plain success on SQLite: delete the claim if it is still the process's, mark the job.

Two statements inside the caller's write transaction (``transaction``); the finish alone,
the group's (``grouped``) and the hand-on's (``hand_on``) all run them.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from ... import db
from ...models import ClaimedExecution, Job
from ..sql import table
from .claim import by_name, named
from .values import moment

if TYPE_CHECKING:
    from ...models.attempt import Attempt


def record_success(claimed: ClaimedExecution, attempt: Attempt, return_value: Any) -> bool:
    """Delete the claim if it is still ours and mark its job finished; whether it was."""
    return finish_job(claimed.job_id, claimed.process_id, *values(attempt, return_value))


def values(attempt: Attempt, return_value: Any) -> tuple[Any, Any, str]:
    """A success's finish time, return value and attempt, as ``finish_job`` takes them."""
    connection = db.connection()
    value = Job._meta.get_field("return_value").get_db_prep_save(return_value, connection)
    return moment(attempt.finished_at, connection), value, json.dumps(attempt.to_dict())


def finish_job(job_id: int, process_id: int | None, finished_at, value, attempt: str) -> bool:
    """Delete the job's claim if it is the process's and mark the job finished; if it was."""
    delete, update = _record_success_sql()
    with db.connection().cursor() as cursor:
        cursor.execute(delete, by_name([job_id, process_id]))
        if cursor.rowcount != 1:
            return False  # lost (pruned, released): nothing changes
        cursor.execute(update, by_name([finished_at, value, attempt, finished_at, job_id]))
    return True


@functools.cache
def _record_success_sql() -> tuple[str, str]:
    return (
        named(f"DELETE FROM {table(ClaimedExecution)} WHERE job_id = %s AND process_id IS %s"),
        named(
            f"UPDATE {table(Job)} SET finished_at = %s, return_value = %s, "
            "attempts = json_insert(attempts, '$[#]', json(%s)), updated_at = %s WHERE id = %s"
        ),
    )
