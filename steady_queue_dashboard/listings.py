"""The job lists the dashboard shows, one per state, and how each is ordered and filtered.

One list per state of ``steady_queue.models.states`` (its word is the list's URL slug):
a list for a new state is one more ``Listing`` here, and importing this module fails
while one is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import states


@dataclass(frozen=True, kw_only=True)
class Listing:
    """One status page: where its rows live and which columns index them."""

    # The state's word (``states``): the list's URL slug.
    status: str
    label: str | Promise
    # Keyset order, all on the execution table where there is one (so that one index can
    # serve it); every list ends with the job id so that the order is total.
    ordering: tuple[str, ...]
    # The column the time-range filter applies to.
    time_field: str
    time_label: str | Promise
    # Filter queues/priorities on the execution row when it has them (its indexes do).
    queue_field: str = "queue_name"
    priority_field: str = "priority"
    row_actions: tuple[str, ...] = ()
    bulk_actions: tuple[str, ...] = ()
    empty: str | Promise = ""

    @property
    def execution(self) -> str | None:
        """Job's reverse one-to-one to the table holding these jobs (None: finished)."""
        return states.get(self.status).relation

    @property
    def live(self) -> bool:
        """Whether its jobs change while looked at (running ones report progress)."""
        return states.get(self.status).started

    @property
    def condition(self) -> Q:
        """What sets this list's jobs apart from others in its execution table: a cancelled
        job's failure (its class, indexed) makes it cancelled, not failed."""
        if self.status == states.CANCELLED:
            return Q(failed_execution__exception_class=CANCELLED_CLASS)
        if self.status == states.FAILED:
            return ~Q(failed_execution__exception_class=CANCELLED_CLASS)
        return Q()

    @property
    def select_related(self) -> tuple[str, ...]:
        if self.status == states.RUNNING:
            return ("claimed_execution", "claimed_execution__process")
        if self.status == states.WAITING:
            # Each row names its workflow run and step: joined, not a query per row.
            return ("waiting_execution", "workflow_step", "workflow_run")
        return (self.execution,) if self.execution else ()


LISTINGS: dict[str, Listing] = {
    listing.status: listing
    for listing in [
        Listing(
            status=states.READY,
            label=_("Ready"),
            # The workers' poll order (POLL_ORDER: priority DESC, fair_order, job_id), served
            # by the sq_poll_* indexes. fair_order is 0 for all while no @fair task is in use.
            ordering=(
                "-ready_execution__priority",
                "ready_execution__fair_order",
                "ready_execution__job_id",
            ),
            time_field="created_at",
            time_label=_("Enqueued"),
            queue_field="ready_execution__queue_name",
            priority_field="ready_execution__priority",
            row_actions=("cancel", "discard"),
            bulk_actions=("cancel", "discard"),
            empty=_("No job is waiting for a worker."),
        ),
        Listing(
            status=states.SCHEDULED,
            label=_("Scheduled"),
            # The dispatcher's order, served by the sq_dispatch_all index.
            ordering=(
                "scheduled_execution__scheduled_at",
                "-scheduled_execution__priority",
                "scheduled_execution__job_id",
            ),
            time_field="scheduled_execution__scheduled_at",
            time_label=_("Due"),
            queue_field="scheduled_execution__queue_name",
            priority_field="scheduled_execution__priority",
            row_actions=("dispatch", "cancel", "discard"),
            bulk_actions=("dispatch", "cancel", "discard"),
            empty=_("No job is scheduled for later."),
        ),
        Listing(
            status=states.RUNNING,
            label=_("Running"),
            ordering=("claimed_execution__created_at", "claimed_execution__job_id"),
            time_field="claimed_execution__created_at",
            time_label=_("Started"),
            row_actions=("cancel",),
            bulk_actions=("cancel",),
            empty=_("No job is running."),
        ),
        Listing(
            status=states.BLOCKED,
            label=_("Blocked"),
            # The release order, served by the sq_blocked_release index.
            ordering=(
                "blocked_execution__concurrency_key",
                "-blocked_execution__priority",
                "blocked_execution__job_id",
            ),
            time_field="created_at",
            time_label=_("Enqueued"),
            queue_field="blocked_execution__queue_name",
            priority_field="blocked_execution__priority",
            row_actions=("release", "cancel", "discard"),
            bulk_actions=("release", "cancel", "discard"),
            empty=_("No job is waiting for a concurrency slot."),
        ),
        Listing(
            status=states.THROTTLED,
            label=_("Throttled"),
            # The release order within each window (sq_throttled_release): the windows come
            # in the order of their digests, each window's jobs in the order they go ready.
            ordering=(
                "throttled_execution__bucket_key",
                "-throttled_execution__priority",
                "throttled_execution__job_id",
            ),
            time_field="created_at",
            time_label=_("Enqueued"),
            queue_field="throttled_execution__queue_name",
            priority_field="throttled_execution__priority",
            row_actions=("cancel", "discard"),
            bulk_actions=("cancel", "discard"),
            empty=_("No job is waiting for room in its rate limit window."),
        ),
        Listing(
            status=states.PAUSED,
            label=_("Paused"),
            # Each paused task's jobs in the order they will run when it resumes
            # (sq_paused_by_task).
            ordering=("paused_execution__task_path", "paused_execution__job_id"),
            time_field="created_at",
            time_label=_("Enqueued"),
            queue_field="paused_execution__queue_name",
            priority_field="paused_execution__priority",
            row_actions=("cancel", "discard"),
            bulk_actions=("cancel", "discard"),
            empty=_("No job waits for its task to resume."),
        ),
        Listing(
            status=states.WAITING,
            label=_("Waiting"),
            # Workflow steps waiting for their upstream steps, and durable jobs for a signal
            # (the Waits page lists these apart): by job id, the table's primary key.
            ordering=("waiting_execution__job_id",),
            time_field="created_at",
            time_label=_("Enqueued"),
            queue_field="waiting_execution__queue_name",
            priority_field="waiting_execution__priority",
            row_actions=("cancel", "discard"),
            bulk_actions=("cancel", "discard"),
            empty=_(
                "No workflow step is waiting for the steps it depends on, and no durable job "
                "for a signal."
            ),
        ),
        Listing(
            status=states.FAILED,
            label=_("Failed"),
            # Newest failures first, served by the sq_failed_recent index; ties by ascending
            # id, the order InnoDB keeps the primary key in within a secondary index.
            ordering=("-failed_execution__created_at", "failed_execution__job_id"),
            time_field="failed_execution__created_at",
            time_label=_("Failed"),
            row_actions=("retry", "discard"),
            bulk_actions=("retry", "discard"),
            empty=_("No failed jobs. Nice."),
        ),
        Listing(
            status=states.CANCELLED,
            label=_("Cancelled"),
            # Newest cancellations first, served by the sq_failed_class index.
            ordering=("-failed_execution__created_at", "failed_execution__job_id"),
            time_field="failed_execution__created_at",
            time_label=_("Cancelled"),
            # Cancelled jobs can still be run again, or dropped.
            row_actions=("retry", "discard"),
            bulk_actions=("retry", "discard"),
            empty=_("No cancelled jobs."),
        ),
        Listing(
            status=states.FINISHED,
            label=_("Finished"),
            ordering=("-finished_at", "-pk"),
            time_field="finished_at",
            time_label=_("Finished"),
            empty=_("No finished job is kept."),
        ),
    ]
}
if list(LISTINGS) != list(states.words()):
    raise ImportError(f"The dashboard lists {list(LISTINGS)}, the states are {states.words()}.")
