"""The archive as the console reads it: its rows, their search, and restoring one.

``ArchivedJob`` rows are written by the engine's pruning (a rule with ``archive=True``)
and restored through ``ArchivedJob.restore()``, which enqueues a new job with the task's
own ``enqueue()`` and announces it to the audit log. Templates read ``ArchiveRow``s, never
the model, so that its columns can change without touching them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from steady_queue import arguments, db
from steady_queue.compat import InvalidTask
from steady_queue.models import ArchivedJob, states
from steady_queue.models.archived_job import SEPARATOR
from steady_queue.ops import audit as ops_audit

from .actions import Outcome
from .history import Attempt, attempts, shown_error
from .job_edits import Refusal, _engine, check_call, digest
from .job_queries import arguments_preview, display_call

#: The Archive page's order, newest archived first: the ``sq_archived_at`` index (and,
#: for one task, ``sq_archived_task``), the id making it total for the keyset.
ARCHIVE_ORDER = ("-archived_at", "-pk")
# What a list row never shows: the long columns stay on the disk.
_NOT_LISTED = ("backtrace", "attempts", "metadata", "return_value", "label_index")


@dataclass(frozen=True)
class ArchiveRow:
    """One archived job as the Archive page and its detail show it (arguments masked)."""

    pk: int
    job_id: int
    task_path: str
    queue_name: str
    priority: int
    backend: str
    state: str
    arguments: str
    enqueued_at: datetime | None
    finished_at: datetime | None
    archived_at: datetime
    rule: str = ""
    labels: list = field(default_factory=list)
    error: dict | None = None
    restored_job_id: int | None = None
    restored_at: datetime | None = None


def archived_jobs() -> QuerySet:
    """Every archived job, without the columns a list does not show."""
    return ArchivedJob.objects.defer(*_NOT_LISTED)


def find_archived(pk: int) -> ArchivedJob | None:
    return ArchivedJob.objects.filter(pk=pk).first()


def archived_by_task(queryset: QuerySet, text: str) -> QuerySet:
    """A task's archived jobs: its full path walks ``sq_archived_task``; a part of it (the
    short name an operator types) is a substring match."""
    if ArchivedJob.objects.filter(task_path=text).exists():
        return queryset.filter(task_path=text)
    return queryset.filter(task_path__icontains=text)


def archived_by_error(queryset: QuerySet, text: str) -> QuerySet:
    """Archived jobs whose last error's class or message holds ``text`` (any case)."""
    return queryset.filter(Q(exception_class__icontains=text) | Q(error_message__icontains=text))


def archived_labelled(queryset: QuerySet, labels: list[str], mode: str) -> QuerySet:
    """Archived jobs holding all (``mode`` "all") or any of ``labels``, matched exactly."""
    terms = [Q(label_index__contains=f"{SEPARATOR}{label}{SEPARATOR}") for label in labels]
    if not terms:
        return queryset
    combined = terms[0]
    for term in terms[1:]:
        combined = combined & term if mode == "all" else combined | term
    return queryset.filter(combined)


def archive_rows(rows: list[ArchivedJob]) -> list[ArchiveRow]:
    return [archive_row(row, preview=True) for row in rows]


def archive_row(row: ArchivedJob, *, preview: bool = False) -> ArchiveRow:
    """``row`` for a template: a list's (one line of arguments) or a detail page's."""
    error = None
    if row.exception_class:
        error = {"exception_class": row.exception_class, "message": row.error_message}
        if not preview:
            error["traceback"] = row.backtrace
        error = shown_error(error)  # an encrypted task's message and traceback hidden
    return ArchiveRow(
        pk=row.pk,
        job_id=row.job_id,
        task_path=row.task_path,
        queue_name=row.queue_name,
        priority=row.priority,
        backend=row.backend,
        state=row.state,
        arguments=arguments_preview(row.arguments, task_path=row.task_path) if preview else "",
        enqueued_at=row.enqueued_at,
        finished_at=row.ended_at,
        archived_at=row.archived_at,
        rule=row.rule,
        labels=list(row.labels or []),
        error=error,
        restored_job_id=row.restored_job_id,
        restored_at=row.restored_at,
    )


def display_archived_arguments(row: ArchivedJob) -> str:
    """The arguments as indented JSON, masked (or ENCRYPTED) as a live job's are on its page."""
    return display_call(row.arguments, row.task_path)


def archived_attempts(row: ArchivedJob) -> list[Attempt]:
    """Its attempts, as a live job's page lists them (no running one: it had ended).

    A failure recorded outside a run (a dead worker's job) has no attempt entry: its
    last error is the last attempt's, as on a live failed job's page.
    """
    done = attempts(row)
    if row.state == states.FAILED and row.exception_class and not (done and done[-1].error):
        error = {"exception_class": row.exception_class, "message": row.error_message}
        error = shown_error(error | {"traceback": ""})
        done.append(Attempt(len(done) + 1, "", None, row.ended_at, error))
    return done


def archived_digest(row: ArchivedJob) -> str:
    """What a restore confirmation signs: the row as it was shown (a digest, not values:
    masked arguments must not travel in a page)."""
    return digest([row.arguments, row.task_path, row.queue_name, row.priority, row.labels])


def restore_problem(row: ArchivedJob) -> str:
    """Why the row cannot be restored now ("" when it can), found without writing anything:
    its task no longer imports, or no longer takes these arguments, or they no longer load."""
    try:
        task = row.task()
        args, kwargs = row.call()
        check_call(task, args, kwargs)
    except InvalidTask as exc:
        return _("%(error)s Nothing can be restored until the task is back.") % {"error": exc}
    except arguments.DeserializationError as exc:
        return _("Its arguments no longer load: %(error)s") % {"error": exc}
    except Refusal as exc:
        return str(exc)
    except Exception as exc:  # the task's module raising as it imports: a message, not a 500
        return _("Task %(path)s cannot be loaded: %(error)s") % {
            "path": row.task_path,
            "error": f"{type(exc).__name__}: {exc}",
        }
    return ""


def restore_archived(pk: int, expected: str, *, user) -> tuple[Outcome, int | None]:
    """Enqueue a new job from archived row ``pk`` if it is still as the operator saw it.

    The engine announces the restore to the audit log in ``user``'s name. What it refuses
    (a task gone, arguments that no longer load or fit, an option's refusal) raises
    ``Refusal`` with nothing written: the enqueue and the row's note of the new job are one
    transaction.
    """
    row = find_archived(pk)
    if row is None:
        return Outcome(False, _("Archived job %(id)s no longer exists.") % {"id": pk}), None
    if archived_digest(row) != expected:
        return Outcome(False, _("Archived job %(id)s changed; check it again.") % {"id": pk}), None
    # The enqueue does not check a call against the task's signature: a job that could
    # only fail is refused here, as on the page.
    if problem := restore_problem(row):
        raise Refusal(problem)
    with ops_audit.acting_as(user.get_username()):
        result = _engine(lambda: _restore(row))
    job_id = int(result.id)
    message = _("Archived job %(id)s (was job %(job)s) was restored as job %(new)s.") % {
        "id": pk,
        "job": row.job_id,
        "new": job_id,
    }
    return Outcome(True, message, affected=1), job_id


def _restore(row: ArchivedJob):
    try:
        with db.atomic():
            return row.restore()
    except arguments.DeserializationError as exc:
        raise Refusal(_("Its arguments no longer load: %(error)s") % {"error": exc}) from exc
