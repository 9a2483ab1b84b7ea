"""A finishing job's concurrency slot, handed with its next blocked job to the same thread.

Without it a slot changes hands in three steps: the finish gives the slot back and moves
the next blocked job of the key to ready; that job takes the slot again; then some
worker's claim (a statement of its own, often the finishing thread's next) takes it
from ready. A hot key's slots stand idle for all of that. Handed on, the finishing
transaction keeps the slot taken (the semaphore is only extended), deletes the blocked
job's row and claims it for the finishing thread, which runs it next: one short
transaction instead of two and a dozen statements fewer.

The finishing thread takes the job only if it would have claimed it next: its queue is
one the worker polls and is not paused, no ready job of the queues it polls comes first
(none is ready there at all: a backlog keeps the poll order, priorities and queue order,
and a hot key cannot starve it), and the worker still claims (``allowed``, asked at
most once). Otherwise, or when the key counts more holders than its limit (a job an
operator released by hand), the slot goes back and the job to ready as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from django.db.models import Q
from django.utils import timezone

from ..pause import Pause
from ..queue_selector import _matches

if TYPE_CHECKING:
    from ...task_options.concurrency import ConcurrencyLimit
    from ..process import Process
    from . import ClaimedExecution


class SlotHandOn:
    """What a finishing worker thread offers: to claim the job its slot passes to."""

    def __init__(self, queues: Sequence[str], process: Process | None, allowed: Callable[[], bool]):
        self.queues = list(queues) or ["*"]
        self.process = process
        self._allowed = allowed
        #: allowed()'s one answer (None: not asked yet).
        self.answer: bool | None = None
        #: The job claimed with the finish (set by the transaction that committed, if any).
        self.claimed: ClaimedExecution | None = None

    def takes(self, queue_name: str) -> bool:
        """Whether this thread claims a job of ``queue_name`` now (asks allowed() once)."""
        if not any(_polls(entry, queue_name) for entry in self.queues):
            return False
        if Pause.objects.filter(queue_name=queue_name).exists():
            return False
        if self._ready_jobs_polled().exists():
            return False  # the thread's next claim takes the best of them, in poll order
        if self.answer is None:
            self.answer = self._allowed()
        return self.answer

    def _ready_jobs_polled(self):
        """The ready jobs of the queues this thread polls (of paused ones too: erring on
        the side of the poll order costs only the hand-on)."""
        from . import ReadyExecution

        if "*" in self.queues:
            return ReadyExecution.objects.all()
        polled = Q()
        for entry in self.queues:
            polled |= (
                Q(queue_name__startswith=entry.removesuffix("*"))
                if "*" in entry
                else Q(queue_name=entry)
            )
        return ReadyExecution.objects.filter(polled)

    def hand_on(self, key: str, limit: ConcurrencyLimit) -> bool:
        """Pass the slot of ``key`` to its next blocked job, claimed here; False: not done.

        Call inside the finishing transaction, before the slot is given back. Nothing is
        written when it returns False.
        """
        from ..semaphore import Semaphore
        from . import BlockedExecution, ClaimedExecution

        self.claimed = None  # a retried transaction starts again
        blocked = BlockedExecution.objects.filter(concurrency_key=key).order_by("-priority", "job")
        following = _locked(blocked.select_related("job")).first()
        if following is None or not self.takes(following.queue_name):
            return False
        if not Semaphore.extend(key, limit):
            return False  # over its limit, or expired: the slot goes back the usual way
        job, now = following.job, timezone.now()
        BlockedExecution.objects.filter(pk=following.pk).delete()
        ClaimedExecution.objects.create(job=job, process=self.process, created_at=now)
        self.claimed = ClaimedExecution.claimed_for(job, self.process, now)
        return True


def _locked(relation):
    """Lock the blocked row only (not its job's) where the database can say so."""
    return relation.locked(only_self=True)


def _polls(entry: str, queue_name: str) -> bool:
    """Whether a worker's queue entry (a name, ``*``, or ``prefix*``) covers ``queue_name``."""
    return _matches(entry, queue_name) if "*" in entry else entry == queue_name
