"""A built-in task to schedule yourself: the cleanup of finished jobs.

Nothing here runs unless you schedule it; see "Clearing finished jobs" in
docs/reference/operations.md::

    from steady_queue.task_options.recurring_task import recurring
    from steady_queue.cleanup import clear_finished_jobs

    recurring(schedule="0 * * * *", key="clear finished jobs")(clear_finished_jobs)

Not named ``tasks.py`` on purpose: the scheduler imports every app's ``tasks`` module,
and this one must cost nothing (nor need a "default" task backend) unless scheduled.
"""

from __future__ import annotations

from .compat import task


@task()
def clear_finished_jobs(batch_size: int = 500) -> int:
    """Delete jobs finished more than ``steady_queue.clear_finished_jobs_after`` ago."""
    from .models import Job

    return Job.objects.clear_finished_in_batches(batch_size=batch_size)
