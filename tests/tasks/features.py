"""Tasks for the feature tests: concurrency limits, retries, context, recurring runs."""

from __future__ import annotations

import time
from datetime import timedelta
from inspect import signature

from steady_queue.compat import task
from steady_queue.context import report_progress, reschedule
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import RetryPolicy, retry_policy

# Runs seen by in-process tests, by result id (reset by the features conftest).
RUNS: dict[str, int] = {}


def _interval(seconds: float) -> list[float]:
    start = time.time()
    time.sleep(seconds)
    return [start, time.time()]


@limits_concurrency(key="exclusive", to=1)
@task()
def exclusive(index: int, seconds: float = 0.0) -> list[float]:
    return _interval(seconds)


@limits_concurrency(key="pair", to=2)
@task()
def paired(index: int, seconds: float = 0.0) -> list[float]:
    return _interval(seconds)


@limits_concurrency(key=lambda account, seconds=0.0: account, to=1)
@task()
def per_account(account: str, seconds: float = 0.0) -> list[float]:
    return _interval(seconds)


@limits_concurrency(key="fragile", to=1)
@task()
def fragile(fail: bool) -> bool:
    if fail:
        raise ValueError("fragile failed")
    return fail


@limits_concurrency(key="dedupe", on_conflict="discard")
@task()
def deduplicated(index: int) -> int:
    return index


@limits_concurrency(key=lambda account: account, group="accounts")
@task()
def bill_account(account) -> int:
    return account.pk


@limits_concurrency(key=lambda account: account, group="accounts", duration=timedelta(seconds=2))
@task()
def notify_account(account) -> int:
    return account.pk


@limits_concurrency(key="short", to=1, duration=timedelta(seconds=2))
@task()
def short_lease(seconds: float = 0.0) -> list[float]:
    return _interval(seconds)


@retry_policy(attempts=3, base_delay=timedelta(seconds=10), backoff=2, jitter=0)
@task(takes_context=True)
def flaky(context, failures: int) -> int:
    if context.attempt <= failures:
        raise ConnectionError(f"attempt {context.attempt} failed")
    return context.attempt


@retry_policy(attempts=3, base_delay=timedelta(seconds=0.3), backoff=2, jitter=0)
@task(takes_context=True)
def quick_flaky(context, failures: int) -> int:
    if context.attempt <= failures:
        raise ConnectionError(f"attempt {context.attempt} failed")
    return context.attempt


@retry_policy(attempts=5, discard_on=(PermissionError,), jitter=0)
@task()
def forbidden() -> None:
    raise PermissionError("not allowed")


@retry_policy(attempts=5, retry_on=(ConnectionError,), jitter=0)
@task()
def wrong_type() -> None:
    raise KeyError("not retried")


@retry_policy(
    attempts=10, base_delay=timedelta(minutes=10), max_age=timedelta(minutes=25), jitter=0
)
@task()
def always_fails() -> None:
    raise ConnectionError("down")


@limits_concurrency(key="retried", to=1)
@retry_policy(attempts=2, base_delay=timedelta(0), jitter=0)
@task(takes_context=True)
def limited_flaky(context) -> int:
    if context.attempt == 1:
        raise ConnectionError("first attempt fails")
    return context.attempt


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task(takes_context=True)
def at_least_once_sleeper(context, seconds: float) -> int:
    if context.attempt == 1:
        time.sleep(seconds)
    return context.attempt


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0)
@task(takes_context=True)
def at_most_once_sleeper(context, seconds: float) -> int:
    if context.attempt == 1:
        time.sleep(seconds)
    return context.attempt


@task(takes_context=True)
def with_progress(context, steps: int, pause: float = 0.0) -> int:
    for step in range(1, steps + 1):
        time.sleep(pause)
        report_progress(context, step, steps, f"step {step}")
    return steps


@task(takes_context=True)
def reschedules_once(context, delay_seconds: float) -> int:
    runs = RUNS.get(context.task_result.id, 0) + 1
    RUNS[context.task_result.id] = runs
    if runs == 1:
        reschedule(context, timedelta(seconds=delay_seconds))
    return context.attempt


@task(takes_context=True)
def catches_everything(context) -> str:
    try:
        reschedule(context, timedelta(minutes=1))
    except Exception:  # a broad handler in user code must not swallow the reschedule
        return "swallowed"
    return "not reached"


@task()
def tick(label: str = "") -> str:
    return label


# Django 6.1 (and the backport) hand extra @task(...) options to the backend's Task class.
TASK_TAKES_OPTIONS = any(p.kind is p.VAR_KEYWORD for p in signature(task).parameters.values())

if TASK_TAKES_OPTIONS:

    @task(takes_context=True, retry=RetryPolicy(attempts=2, base_delay=timedelta(0), jitter=0))
    def retried_by_option(context) -> int:
        if context.attempt == 1:
            raise ConnectionError("first attempt fails")
        return context.attempt
