"""Tasks of the engine state machine: they succeed or fail at once, some under a limit."""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy

LIMIT = 2


@task()
def succeeds(key: str) -> str:
    return key


@task()
def fails(key: str) -> None:
    raise ValueError(key)


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def safe(key: str) -> str:
    """At least once: a crash schedules another attempt instead of failing the job."""
    return key


@limits_concurrency(key=lambda key: key, to=LIMIT, group="property")
@task()
def limited_succeeds(key: str) -> str:
    return key


@limits_concurrency(key=lambda key: key, to=LIMIT, group="property")
@task()
def limited_fails(key: str) -> None:
    raise ValueError(key)


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0, at_least_once=True)
@limits_concurrency(key=lambda key: key, to=LIMIT, group="property")
@task()
def limited_safe(key: str) -> str:
    return key


ALL = [succeeds, fails, safe, limited_succeeds, limited_fails, limited_safe]
