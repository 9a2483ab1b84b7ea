"""The tasks bench/throttled.py enqueues: two under a rate limit, one without."""

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.rate_limits import rate_limit


@rate_limit(to=1, per=timedelta(minutes=1))
@task()
def once_a_minute():
    return None


@rate_limit(to=50, per=timedelta(seconds=1))
@task()
def fifty_a_second():
    return None


@task()
def unlimited():
    return None
