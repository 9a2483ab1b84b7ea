"""Tasks declared ``@rate_limit`` for the rate limit tests (tests/task_options/)."""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.rate_limits import RateLimit, rate_limit
from tests.tasks.features import TASK_TAKES_OPTIONS

# Arguments of the runs seen in this process, in start order.
STARTS: list[tuple] = []


@rate_limit(to=3, per=timedelta(minutes=1))
@task()
def three_a_minute(n: int) -> int:
    STARTS.append(("three_a_minute", n))
    return n


@rate_limit(to=2, per=timedelta(minutes=1), key=lambda customer_id, n: f"customer-{customer_id}")
@task()
def per_customer(customer_id: int, n: int) -> int:
    STARTS.append(("per_customer", customer_id, n))
    return n


@rate_limit(to=1, per=timedelta(hours=1), key=lambda n: 1 / n)
@task()
def key_divides(n: int) -> int:
    return n


@task()
def unlimited(n: int) -> int:
    STARTS.append(("unlimited", n))
    return n


if TASK_TAKES_OPTIONS:

    @task(rate_limit=RateLimit(to=1, per=timedelta(minutes=1)))
    def declared_in_task(n: int) -> int:
        STARTS.append(("declared_in_task", n))
        return n
