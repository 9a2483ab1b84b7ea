"""A job moved to the finished history, as the console's job page shows it (read-only).

With ``steady_queue.partition_finished_by`` on PostgreSQL, maintenance moves succeeded
jobs out of the jobs table into ``FinishedHistory``; a link to such a job (a result's
id, a log line) still opens its page. It is shown as the Archive shows an archived job
(``archive.ArchiveRow``, the same template), with its return value and metadata, and no
action: there is nothing left to act on.
"""

from __future__ import annotations

from django.db.models import QuerySet

from steady_queue.models import FinishedHistory, states

from .archive import ArchiveRow
from .history import attempts
from .job_queries import arguments_preview, display_call, display_value
from .labels import display_metadata


def find_in_history(pk: int) -> FinishedHistory | None:
    """The history row of job ``pk`` (None off PostgreSQL, or not there): one query."""
    return FinishedHistory.find(pk)


def history_context(row: FinishedHistory) -> dict:
    """What the archive's detail template shows of ``row``, marked as history."""
    return {
        "row": _archive_row(row, arguments=""),
        "arguments": display_call(row.arguments, row.task_path),
        "attempts": attempts(row),
        "error": None,
        "return_value": display_value(row.return_value),
        "metadata": display_metadata(row),
        "history": True,
    }


#: The history list's order, newest finished first: the (finished_at, id) index of each
#: day partition, merged; the id makes it total for the keyset.
HISTORY_ORDER = ("-finished_at", "-pk")
# What a list row never shows: the long columns stay on the disk.
_NOT_LISTED = ("attempts", "metadata", "return_value")


def history_shown() -> bool:
    """Whether the console offers the history list: the setting on, on PostgreSQL (where
    the table is; a history turned off stays readable by id)."""
    from steady_queue.retention import history

    return history.enabled()


def history_rows() -> QuerySet:
    """Every job in the finished history, without the columns a list does not show."""
    return FinishedHistory.objects.defer(*_NOT_LISTED)


def history_list_rows(rows: list[FinishedHistory]) -> list[ArchiveRow]:
    """``rows`` for the list: their arguments on one line, masked (sealed: encrypted)."""
    return [
        _archive_row(row, arguments=arguments_preview(row.arguments, task_path=row.task_path))
        for row in rows
    ]


def _archive_row(row: FinishedHistory, *, arguments: str) -> ArchiveRow:
    """``row`` in the shape the Archive's templates show (finished; moved = archived)."""
    return ArchiveRow(
        pk=row.pk,
        job_id=row.pk,
        task_path=row.task_path,
        queue_name=row.queue_name,
        priority=row.priority,
        backend=row.backend,
        state=states.FINISHED,
        arguments=arguments,
        enqueued_at=row.created_at,
        finished_at=row.finished_at,
        archived_at=row.moved_at,
        labels=list(row.labels or []),
    )
