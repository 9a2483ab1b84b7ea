"""Bulk job actions for the command line, through the engine's operations API.

The same calls the dashboard makes (``retry_all``, ``discard_all``, ``cancel_all``,
``dispatch_all_now``, ``release_all``), a batch of ids at a time: each batch commits
before the next
starts, so an error part-way leaves the earlier batches done and the count says how many.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..models import states
from .selection import JobSelection, SelectionError, id_batches

BATCH_SIZE = 500


@dataclass(frozen=True)
class Action:
    """A bulk action: the queryset method running it and the statuses it applies to."""

    method: str
    statuses: tuple[str, ...]
    past_tense: str
    # The status meant when none is given, for an action of several (None: required).
    default_status: str | None = None

    def check(self, selection: JobSelection, name: str) -> None:
        """Raise SelectionError unless ``selection`` names one status this action applies to."""
        if selection.status not in self.statuses:
            raise SelectionError(
                f"{name} applies to {' or '.join(self.statuses)} jobs: "
                f"choose with --status {'|'.join(self.statuses)}."
            )


def _where(flag: str) -> tuple[str, ...]:
    """The states (kinds, then cancelled) whose ``flag`` says the action applies."""
    return tuple(state.name for state in states.all_states() if getattr(state, flag))


ACTIONS = {
    # A cancelled job can be retried too (run again) or discarded, as failed ones.
    "retry": Action("retry_all", _where("retryable"), "retried", default_status=states.FAILED),
    "discard": Action("discard_all", _where("discardable"), "discarded"),
    "dispatch": Action("dispatch_all_now", (states.SCHEDULED,), "dispatched"),
    # Only where a slot of the job's key is free, unless forced (run(..., force=True)).
    "release": Action("release_all", (states.BLOCKED,), "released"),
    # Jobs not started end at once (failed with JobCancelled); running ones are asked to stop.
    "cancel": Action("cancel_all", _where("cancellable"), "cancelled"),
}


def run(
    action: Action,
    selection: JobSelection,
    *,
    batch_size: int = BATCH_SIZE,
    progress: Callable[[int], None] | None = None,
    force: bool = False,
) -> int:
    """Run ``action`` on the selected jobs, a batch at a time; return how many it changed.

    Each batch is selected again with the filters, so a job that changed status since
    it was counted is left alone. ``force`` releases blocked jobs over their limit.
    """
    jobs = selection.jobs()
    options = {"force": True} if force else {}
    done = 0
    for ids in id_batches(jobs, batch_size):
        batch = jobs.filter(pk__in=ids)
        done += getattr(batch, action.method)(batch_size=batch_size, **options)
        if progress is not None:
            progress(done)
    return done
