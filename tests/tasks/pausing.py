"""Tasks for the task pause tests: one that pauses its own task as it runs."""

from __future__ import annotations

import time

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


def _append(log_path: str, line: str) -> None:
    # One write() on an O_APPEND file: lines from concurrent processes never interleave.
    with open(log_path, "a") as log:
        log.write(f"{line}\n")


@task()
def exported(log_path: str, label: str, seconds: float = 0.0) -> str:
    """The task the process test pauses: it logs ``<monotonic> <label>`` as it starts."""
    _append(log_path, f"{time.monotonic()} {label}")
    time.sleep(seconds)
    return label


@task()
def mailed(log_path: str, label: str) -> str:
    """The task that keeps running while ``exported`` is paused."""
    _append(log_path, f"{time.monotonic()} {label}")
    return label
