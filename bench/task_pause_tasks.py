"""The tasks of bench/task_pause_backlog.py: the paused one and the one that keeps running."""

from __future__ import annotations

from steady_queue.compat import task


@task()
def export() -> None:
    return None


@task()
def other() -> None:
    return None
