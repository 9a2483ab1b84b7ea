"""Tasks for the task pause tests: one that pauses its own task as it runs."""

from __future__ import annotations

from steady_queue.compat import task
from steady_queue.pauses import pause_task
from steady_queue.task_options.concurrency import limits_concurrency

RAN: list[int] = []


@limits_concurrency(key="self-pausing", to=1)
@task()
def pauses_itself(n: int) -> int:
    if n == 0:
        pause_task(pauses_itself)
    RAN.append(n)
    return n
