"""Tasks declared ``@unique`` for the uniqueness tests (tests/task_options/test_uniqueness.py)."""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy
from steady_queue.task_options.uniqueness import Unique, unique
from tests.tasks.features import TASK_TAKES_OPTIONS

# Set by a test to make the next run of ``sync_account`` fail (then reset).
FAILURES: list[str] = []


@unique(key=lambda account_id, **kwargs: str(account_id))
@task()
def sync_account(account_id: int, full: bool = False) -> int:
    if FAILURES:
        raise ConnectionError(FAILURES.pop())
    return account_id


@unique()
@task()
def by_arguments(account_id: int, full: bool = False, **options) -> int:
    return account_id


@unique(key=lambda account_id: account_id, period=timedelta(hours=1))
@task()
def digest(account_id: int) -> int:
    return account_id


@retry_policy(attempts=2, base_delay=timedelta(minutes=5), jitter=0)
@unique(key=lambda account_id: account_id)
@task()
def flaky_sync(account_id: int) -> int:
    raise ConnectionError("the account server is down")


@unique(key=lambda account_id: account_id)
@task(queue_name="background", priority=5)
def other_sync(account_id: int) -> int:
    return account_id


@unique(key=lambda account_id: 1 / account_id)
@task()
def fragile_key(account_id: int) -> int:
    return account_id


@limits_concurrency(key="one at a time", to=1)
@unique(key=lambda account_id: account_id)
@task()
def limited_sync(account_id: int) -> int:
    return account_id


@limits_concurrency(key="one at a time", to=1, on_conflict="discard")
@unique(key=lambda account_id: account_id)
@task()
def discarding_sync(account_id: int) -> int:
    return account_id


@unique(key=lambda text: text)
@task()
def long_key(text: str) -> str:
    return text


if TASK_TAKES_OPTIONS:

    @task(unique=Unique(key=lambda account_id: account_id))
    def unique_by_option(account_id: int) -> int:
        return account_id
