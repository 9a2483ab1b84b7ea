from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone

from ...task_options import concurrency

if TYPE_CHECKING:
    from ..execution.slot_hand_on import SlotHandOn


class ConcurrencyControls:
    """Semaphore handling for jobs of tasks declared with ``@limits_concurrency``."""

    @property
    def is_concurrency_limited(self) -> bool:
        return bool(self.concurrency_key)

    @property
    def concurrency_limit(self) -> concurrency.ConcurrencyLimit | None:
        return concurrency.limit_for(self.task_path)

    def acquire_concurrency_lock(self) -> bool:
        """Take a slot of this job's semaphore; False when all ``to`` slots are taken."""
        limit = self.concurrency_limit
        if limit is None:
            return True
        from ..semaphore import Semaphore

        return Semaphore.wait(self.concurrency_key, limit)

    def release_concurrency_lock(self) -> None:
        limit = self.concurrency_limit
        if self.is_concurrency_limited and limit is not None:
            from ..semaphore import Semaphore

            Semaphore.signal(self.concurrency_key, limit)

    def handle_concurrency_conflict(self) -> None:
        limit = self.concurrency_limit
        if limit is not None and limit.on_conflict == "discard":
            from .groups import job_discarded

            # Its end counts in its batch or workflow like any discard's, before the
            # row that says which group it belongs to goes.
            job_discarded(self)
            type(self).objects.filter(pk=self.pk).delete()
        else:
            self.block()

    def block(self) -> None:
        from ..execution import BlockedExecution

        BlockedExecution.objects.create(
            job=self,
            queue_name=self.queue_name,
            priority=self.priority,
            concurrency_key=self.concurrency_key,
            expires_at=timezone.now() + self.concurrency_limit.expires_in,
        )

    def unblock_next_blocked_job(self, hand_on: SlotHandOn | None = None) -> None:
        """Release the semaphore and move the next job blocked on it to ready.

        With ``hand_on`` (a finishing worker thread's offer) the slot may pass straight
        to that job, claimed for the thread (see slot_hand_on).
        """
        from ..execution import BlockedExecution

        if not self.is_concurrency_limited:
            return
        limit = self.concurrency_limit
        key = self.concurrency_key
        if hand_on is not None and limit is not None and hand_on.hand_on(key, limit):
            return
        self.release_concurrency_lock()
        BlockedExecution.release_one(self.concurrency_key)
