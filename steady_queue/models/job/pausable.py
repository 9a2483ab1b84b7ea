"""Jobs of paused tasks (``steady_queue.pauses``): the check as a run would start."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..execution.outcomes import Paused


class Pausable:
    """Whether a claimed job's task is paused, asked as its run would start."""

    def paused_run(self) -> Paused | None:
        """The outcome a run of this job ends with if its task is paused (``Paused``: it
        waits as paused, not an attempt); else None.

        A job that became ready as its task was being paused (its transaction had not
        seen the pause), or that was handed a concurrency slot, reaches a worker; it must
        not start while its task is paused. The database is asked only when this
        process's hint of the paused tasks names the task: the hint is at most
        ``HINT_SECONDS`` old and ``pause_task`` returns only after that long, so a run
        starting after it returned sees the pause, and a run of a task no one paused
        costs no query. The question confirms a hint that may be stale the other way (the
        task resumed since), which would otherwise park a job its resume had freed.
        """
        from ..execution.outcomes import Paused
        from ..task_pause import TaskPause

        if not TaskPause.seems_paused(self.task_path):
            return None
        if TaskPause.objects.filter(task_path=self.task_path).exists():
            return Paused()
        return None
