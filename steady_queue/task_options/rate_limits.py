"""Rate limits: ``@rate_limit`` and its registry; at most ``to`` starts per ``per``.

    from steady_queue.task_options.rate_limits import rate_limit, RateLimit

    @rate_limit(to=10, per=timedelta(seconds=1), key=lambda customer_id, **kw: str(customer_id))
    @task()          # or, on Django 6.1+, @task(rate_limit=RateLimit(to=10, per=...))
    def call_partner_api(customer_id, payload): ...

Fleet-wide: every worker on every machine counts against one window per task (per
key, when ``key`` is given), kept in the queue database (``models/rate_limit.py``).
A job's key is computed when it is enqueued and kept in ``Job.rate_limit_key``. Jobs
over the limit wait as throttled (``ThrottledExecution``), out of the ready table, so
nothing queued behind them waits for them; a dispatcher makes them ready when the
window has room.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..compat import Task
from ..exceptions import RateLimitKeyError
from . import TaskOptions, key_text, stored_key

# Task module path -> its limit; filled when the task's module is imported.
_registry: TaskOptions[RateLimit] = TaskOptions()

#: ``Job.rate_limit_key`` of a job whose task has one window for all its jobs.
WHOLE_TASK = "*"
#: Keys longer than this are kept as their digest (``Job.rate_limit_key`` holds 255).
READABLE_LENGTH = 200


@dataclass(frozen=True, kw_only=True)
class RateLimit:
    """No more than ``to`` runs start within any window of length ``per`` (per key).

    ``key`` receives the task's arguments as called and returns what names the
    window; without it the task has one window for all its jobs.
    """

    to: int
    per: timedelta
    key: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.to, bool) or not isinstance(self.to, int):
            raise TypeError(f"RateLimit(to=...) must be a whole number, not {self.to!r}.")
        if self.to < 1:
            raise ValueError(f"RateLimit(to=...) must be at least 1, not {self.to}.")
        if not isinstance(self.per, timedelta):
            raise TypeError(f"RateLimit(per=...) must be a timedelta, not {self.per!r}.")
        if self.per <= timedelta(0):
            raise ValueError(f"RateLimit(per=...) must be positive, not {self.per}.")
        if self.key is not None and not callable(self.key):
            raise TypeError(
                f"RateLimit(key=...) must be a function of the task's arguments, not {self.key!r}."
            )

    def key_for(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """The job's key (``Job.rate_limit_key``) for calling ``task`` with these arguments."""
        if self.key is None:
            return WHOLE_TASK
        try:
            value = self.key(*args, **kwargs)
        except Exception as exc:
            raise RateLimitKeyError(
                f"Could not compute the rate limit key of task {task.module_path}: {exc!r}"
            ) from exc
        return stored_key(key_text(value), READABLE_LENGTH)

    @property
    def margin(self) -> timedelta:
        """Extra room between a slot's start and its next one (2% of ``per``, at most 50 ms).

        A run is admitted a moment before the task's first line runs, and that moment
        varies from run to run on a busy machine; the margin keeps starts as the task
        itself sees them within the limit too.
        """
        return min(self.per / 50, timedelta(milliseconds=50))


def rate_limit(
    *, to: int, per: timedelta, key: Callable[..., Any] | None = None
) -> Callable[[Task], Task]:
    """Start no more than ``to`` runs of the task (per ``key``) within any ``per``."""
    declaration = RateLimit(to=to, per=per, key=key)

    def decorate(task: Task) -> Task:
        if not isinstance(task, Task):
            raise TypeError("@rate_limit(...) goes above @task(): it takes a Task, not a function.")
        _registry.register(task, declaration)
        return task

    return decorate


def register(task: Task, declaration: object) -> None:
    """Declare the limit given as ``@task(rate_limit=...)`` (Django 6.1+)."""
    check_declaration(declaration)
    _registry.register(task, declaration)


def check_declaration(declaration: object) -> None:
    """Refuse anything but a ``RateLimit(...)`` given to ``@task(rate_limit=...)``."""
    if not isinstance(declaration, RateLimit):
        raise TypeError(f"@task(rate_limit=...) takes a RateLimit(...), not {declaration!r}.")


def rate_limit_for(task_path: str) -> RateLimit | None:
    """Return the rate limit declared for the task at ``task_path``, if any."""
    return _registry.get(task_path)


def bucket_key(task_path: str, job_key: str) -> str:
    """The primary key of a window's row: a digest of the task path and the job's key.

    Short and uniform, so that no collation (MySQL compares case and trailing spaces
    away) makes two keys one.
    """
    return hashlib.sha256(f"{task_path}\x00{job_key}".encode()).hexdigest()
