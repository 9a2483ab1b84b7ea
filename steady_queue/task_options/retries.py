"""Retry policies: run a failed job again later, keeping its id and every attempt's error.

Declare a policy with ``@retry_policy(...)`` stacked on ``@task``, or on Django 6.1+
pass it to the decorator directly: ``@task(retry=RetryPolicy(...))``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..compat import Task
from ..exceptions import ProcessExitError, ProcessPrunedError
from . import TaskOptions, fairness, rate_limits, uniqueness

if TYPE_CHECKING:
    from ..models import Job

ExceptionTypes = tuple[type[BaseException], ...]

# Task module path -> its policy; filled when the task's module is imported.
_registry: TaskOptions[RetryPolicy] = TaskOptions()

# The errors a job gets when the process running it dies under it.
CRASH_ERRORS = (ProcessExitError, ProcessPrunedError)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how late a failed job runs again.

    The n-th retry waits ``base_delay * backoff ** (n - 1)``, plus up to ``jitter``
    times that at random, kept between ``min_delay`` and ``max_delay``.
    """

    attempts: int = 3
    base_delay: timedelta = timedelta(seconds=3)
    backoff: float = 2.0
    min_delay: timedelta = timedelta(0)
    max_delay: timedelta = timedelta(hours=1)
    jitter: float = 0.15
    retry_on: ExceptionTypes = (Exception,)
    discard_on: ExceptionTypes = ()
    max_age: timedelta | None = None
    at_least_once: bool = False

    def __post_init__(self) -> None:
        # Refused here, not when a job fails: a bad delay would otherwise surface as an
        # outcome that cannot be stored, the first time the task fails.
        for name in ("base_delay", "min_delay", "max_delay", "max_age"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) and not (name == "max_age" and value is None):
                raise TypeError(f"RetryPolicy({name}=...) must be a timedelta, not {value!r}.")
        if self.attempts < 1:
            raise ValueError("RetryPolicy(attempts=...) must be at least 1.")
        if self.backoff < 1 or not 0 <= self.jitter <= 1:
            raise ValueError("RetryPolicy needs backoff >= 1 and 0 <= jitter <= 1.")
        if self.min_delay > self.max_delay:
            raise ValueError("RetryPolicy(min_delay=...) must not exceed max_delay.")
        for kind in (*self.retry_on, *self.discard_on):
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError(f"RetryPolicy expects exception classes, not {kind!r}.")

    def delay(self, retry: int, rand: Callable[[], float] = random.random) -> timedelta:
        """Return how long to wait before retry number ``retry`` (1 for the first)."""
        delay = self.base_delay * self.backoff ** (retry - 1)
        delay *= 1 + self.jitter * rand()
        return min(max(delay, self.min_delay), self.max_delay)

    def retries(self, exc: BaseException, attempt: int) -> bool:
        """Whether a job whose ``attempt``-th run raised ``exc`` runs again."""
        if attempt >= self.attempts:
            return False
        if isinstance(exc, CRASH_ERRORS):
            # Rerunning a job whose worker died may repeat its side effects: opt-in only.
            return self.at_least_once
        return isinstance(exc, self.retry_on) and not isinstance(exc, self.discard_on)

    def retry_at(
        self, job: Job, exc: BaseException, now: datetime, rand=random.random
    ) -> datetime | None:
        """Return when ``job`` runs again after the failure ``exc``, or None to fail it."""
        attempt = len(job.attempts)
        if not self.retries(exc, attempt):
            return None
        run_at = now + self.delay(attempt, rand)
        if self.max_age is not None and run_at > job.created_at + self.max_age:
            return None
        return run_at


@dataclass(frozen=True, slots=True, kw_only=True)
class SteadyQueueTask(Task):
    """The backend's Task: on Django 6.1+, ``@task(retry=RetryPolicy(...))`` works too,
    and ``@task(timeout=timedelta(...))``, ``@task(unique=Unique(...))``
    (``steady_queue.task_options.uniqueness``), ``@task(rate_limit=RateLimit(...))``
    (``steady_queue.task_options.rate_limits``) and ``@task(fairness=Fairness(...))``
    (``steady_queue.fairness``)."""

    retry: RetryPolicy | None = None
    timeout: timedelta | None = None
    unique: uniqueness.Unique | None = None
    rate_limit: rate_limits.RateLimit | None = None
    fairness: fairness.Fairness | None = None

    def __post_init__(self) -> None:
        if self.unique is not None:
            uniqueness.check_declaration(self.unique)
        if self.rate_limit is not None:
            rate_limits.check_declaration(self.rate_limit)
        if self.fairness is not None:
            fairness.check_declaration(self.fairness)
        Task.__post_init__(self)  # zero-argument super() fails in a slots dataclass
        if self.retry is not None:
            _registry.register(self, self.retry)
        if self.timeout is not None:
            from . import timeouts

            timeouts.register(self, self.timeout)
        if self.unique is not None:
            uniqueness.register(self, self.unique)
        if self.rate_limit is not None:
            rate_limits.register(self, self.rate_limit)
        if self.fairness is not None:
            fairness.register(self, self.fairness)


def retry_policy(
    *,
    attempts: int = 3,
    base_delay: timedelta = timedelta(seconds=3),
    backoff: float = 2.0,
    min_delay: timedelta = timedelta(0),
    max_delay: timedelta = timedelta(hours=1),
    jitter: float = 0.15,
    retry_on: ExceptionTypes = (Exception,),
    discard_on: ExceptionTypes = (),
    max_age: timedelta | None = None,
    at_least_once: bool = False,
) -> Callable[[Task], Task]:
    """Run the task up to ``attempts`` times, waiting longer after each failure."""
    policy = RetryPolicy(
        attempts=attempts,
        base_delay=base_delay,
        backoff=backoff,
        min_delay=min_delay,
        max_delay=max_delay,
        jitter=jitter,
        retry_on=tuple(retry_on),
        discard_on=tuple(discard_on),
        max_age=max_age,
        at_least_once=at_least_once,
    )

    def decorate(task: Task) -> Task:
        _registry.register(task, policy)
        return task

    return decorate


def policy_for(task_path: str) -> RetryPolicy | None:
    """Return the retry policy of the task at ``task_path``, if it has one."""
    return _registry.get(task_path)
