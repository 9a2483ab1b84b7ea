"""The claimed jobs of a process, when it stops or dies without finishing them."""

from __future__ import annotations


class Executor:
    def fail_all_claimed_executions_with(self, exc: BaseException) -> int:
        """Fail every job this process claimed with ``exc``; return how many."""
        from .execution import ClaimedExecution

        return ClaimedExecution.fail_all_with(self._claims(), exc)

    def release_all_claimed_executions(self) -> int:
        """Put every job this process claimed back to ready; return how many."""
        from .execution import ClaimedExecution

        return ClaimedExecution.release_all(self._claims())

    def _claims(self):
        from .execution import ClaimedExecution

        return ClaimedExecution.objects.filter(process_id=self.pk)
