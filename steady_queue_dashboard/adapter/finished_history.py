"""A job moved to the finished history, as the console's job page shows it (read-only).

With ``steady_queue.partition_finished_by`` on PostgreSQL, maintenance moves succeeded
jobs out of the jobs table into ``FinishedHistory``; a link to such a job (a result's
id, a log line) still opens its page. It is shown as the Archive shows an archived job
(``archive.ArchiveRow``, the same template), with its return value and metadata, and no
action: there is nothing left to act on.
"""

from __future__ import annotations

from steady_queue.models import FinishedHistory, states

from .archive import ArchiveRow
from .history import attempts
from .job_queries import display_call, display_value
from .labels import display_metadata


def find_in_history(pk: int) -> FinishedHistory | None:
    """The history row of job ``pk`` (None off PostgreSQL, or not there): one query."""
    return FinishedHistory.find(pk)


def history_context(row: FinishedHistory) -> dict:
    """What the archive's detail template shows of ``row``, marked as history."""
    return {
        "row": ArchiveRow(
            pk=row.pk,
            job_id=row.pk,
            task_path=row.task_path,
            queue_name=row.queue_name,
            priority=row.priority,
            backend=row.backend,
            state=states.FINISHED,
            arguments="",
            enqueued_at=row.created_at,
            finished_at=row.finished_at,
            archived_at=row.moved_at,
            labels=list(row.labels or []),
        ),
        "arguments": display_call(row.arguments, row.task_path),
        "attempts": attempts(row),
        "error": None,
        "return_value": display_value(row.return_value),
        "metadata": display_metadata(row),
        "history": True,
    }
