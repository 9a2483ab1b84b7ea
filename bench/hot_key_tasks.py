"""The task bench/hot_key.py enqueues: 10 ms of work, at most two at a time."""

import time

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency


@limits_concurrency(key="hot", to=2)
@task()
def hot(seconds: float) -> list[float]:
    """Work for ``seconds``; return when the work began and ended (the slot's busy time)."""
    began = time.time()
    time.sleep(seconds)
    return [began, time.time()]
