"""No-op tasks, one per backend under test, a pause for bench/wait.py, and an async nap."""

import asyncio
import time

from django.conf import settings

from steady_queue.compat import task


@task()
def noop():
    return None


@task(backend="dtdb")
def noop_dtdb():
    return None


@task()
def pause(seconds: float):
    time.sleep(seconds)


@task()
async def nap(seconds: float):
    """What bench/async_tasks.py runs: an async task waiting for I/O."""
    await asyncio.sleep(seconds)


if settings.DJ_QUEUE:

    @task(backend="djq")
    def noop_djq():
        # dj-queue keeps no start time of a run: the task returns it, for the latency
        # and the drain's span (a clock read: as good as a no-op).
        return time.time()
