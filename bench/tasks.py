"""No-op tasks, one per backend under test, and a pause for bench/wait.py."""

import time

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
