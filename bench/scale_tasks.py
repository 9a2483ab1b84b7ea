"""The jobs bench/scale.py drains: nothing, and 50 ms of waiting (an I/O-bound job)."""

import time

from steady_queue.compat import task


@task()
def noop():
    return None


@task()
def sleep_50ms():
    time.sleep(0.05)
