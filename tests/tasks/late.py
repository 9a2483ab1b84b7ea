"""A task module nothing imports up front: options must be found by importing it late."""

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy


@limits_concurrency(key="late", to=4)
@retry_policy(attempts=7)
@task()
def late() -> None:
    return None
