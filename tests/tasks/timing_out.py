"""Tasks that run past their timeout: in Python code, in a C call, and async."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy
from steady_queue.task_options.timeouts import timeout

LIMIT = 60.0  # no task here outlives a test run by more than this


@timeout(timedelta(seconds=0.5))
@task()
def spins() -> None:
    """Pure Python: the interrupt stops it where it is."""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        pass


@timeout(0.5)
@task()
def sleeps(seconds: float = 3.0) -> str:
    """In a C call: it does not see the interrupt until time.sleep returns."""
    time.sleep(seconds)
    return "woke up"


@timeout(timedelta(seconds=0.5))
@task()
async def awaits() -> None:
    await asyncio.sleep(LIMIT)


@retry_policy(attempts=2, base_delay=timedelta(0))
@timeout(timedelta(seconds=0.3))
@task()
def spins_then_retries() -> None:
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        pass


@timeout(timedelta(seconds=5))
@task()
def quick() -> str:
    return "done"


@task()
def undeclared(seconds: float) -> str:
    time.sleep(seconds)
    return "done"


def _append(path: str) -> None:
    with open(path, "a") as out:
        out.write(f"{time.time()}\n")


@retry_policy(attempts=3, base_delay=timedelta(seconds=30))
@timeout(timedelta(seconds=0.3))
@task()
def swallows(path: str, seconds: float = 3.0) -> None:
    """Catches every Exception in a loop that writes: its timeout must stop it all the same."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            _append(path)
            time.sleep(0.01)
        except Exception:
            pass


@limits_concurrency(key=lambda seconds: "stuck", to=1)
@timeout(timedelta(seconds=0.3))
@task()
def sleeps_holding_a_slot(seconds: float) -> str:
    time.sleep(seconds)
    return "woke up"


@timeout(timedelta(seconds=0.3))
@task()
def swallows_everything(path: str, seconds: float = 1.0) -> str:
    """A bare except in a loop: the interrupt comes back, and the run still times out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            _append(path)
            time.sleep(0.01)
        except BaseException:  # what the test is about: it swallows even the interrupt
            pass
    return "returned"
