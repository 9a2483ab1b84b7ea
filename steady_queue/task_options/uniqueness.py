"""Unique jobs: ``@unique`` and its registry; at most one job per key at a time.

Declare it stacked on ``@task`` (any Django version), or on Django 6.1+ pass it to the
decorator directly: ``@task(unique=Unique(...))``. A job's key is computed when it is
enqueued and kept in ``Job.unique_key``; the database holds one row per key in
``UniqueLock`` (``models/unique_lock.py``), and its primary key is what makes a second
enqueue of the same key a duplicate, however many processes try at once.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .. import arguments
from ..compat import Task
from ..exceptions import UniqueKeyError
from . import DIGEST_PREFIX, TaskOptions, key_text, stored_key

# Task module path -> its declaration; filled when the task's module is imported.
_registry: TaskOptions[Unique] = TaskOptions()

#: Keys longer than this are kept as their digest (``Job.unique_key`` holds 255).
READABLE_LENGTH = 200


@dataclass(frozen=True, kw_only=True)
class Unique:
    """At most one job per key: while it has not ended (``period=None``), or per period.

    ``key`` receives the task's arguments as called and returns what names the
    duplicate class; by default, every argument (bound to the task's parameters).
    """

    key: Callable[..., Any] | None = None
    period: timedelta | None = None

    def __post_init__(self) -> None:
        if self.key is not None and not callable(self.key):
            raise TypeError(
                f"Unique(key=...) must be a function of the task's arguments, not {self.key!r}."
            )
        if self.period is not None and not isinstance(self.period, timedelta):
            raise TypeError(f"Unique(period=...) must be a timedelta or None, not {self.period!r}.")
        if self.period is not None and self.period <= timedelta(0):
            raise ValueError(f"Unique(period=...) must be positive, not {self.period}.")

    def key_for(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """Return the key of calling ``task`` with ``args`` and ``kwargs``, as stored on the job."""
        try:
            if self.key is None:
                text = _arguments_key(task, args, kwargs)
            else:
                text = self._custom_key(args, kwargs)
        except Exception as exc:
            raise UniqueKeyError(
                f"Could not compute the unique key of task {task.module_path}: {exc!r}"
            ) from exc
        return stored_key(text, READABLE_LENGTH)

    def _custom_key(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        return key_text(self.key(*args, **kwargs))


def unique(
    *, key: Callable[..., Any] | None = None, period: timedelta | None = None
) -> Callable[[Task], Task]:
    """Enqueue at most one job per ``key``: while it has not ended, or once per ``period``."""
    declaration = Unique(key=key, period=period)

    def decorate(task: Task) -> Task:
        if not isinstance(task, Task):
            raise TypeError("@unique(...) goes above @task(): it takes a Task, not a function.")
        _registry.register(task, declaration)
        return task

    return decorate


def register(task: Task, declaration: Unique) -> None:
    """Declare ``task`` unique (what ``@task(unique=...)`` does)."""
    check_declaration(declaration)
    _registry.register(task, declaration)


def check_declaration(declaration: object) -> None:
    """Refuse anything but a ``Unique(...)`` given to ``@task(unique=...)``."""
    if not isinstance(declaration, Unique):
        raise TypeError(f"@task(unique=...) takes a Unique(...), not {declaration!r}.")


def unique_for(task_path: str) -> Unique | None:
    """Return the uniqueness declared for the task at ``task_path``, if any."""
    return _registry.get(task_path)


def lock_key(task_path: str, job_key: str) -> str:
    """The primary key of the lock row: a digest of the task path and the job's key.

    A digest is short and uniform, so that no database collation (MySQL's compare
    case and trailing spaces away) can make two different keys one.
    """
    return hashlib.sha256(f"{task_path}\x00{job_key}".encode()).hexdigest()


def is_digest(job_key: str) -> bool:
    """Whether a job's key is kept as the digest of a longer one."""
    return job_key.startswith(DIGEST_PREFIX)


def _arguments_key(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    # Canonical: the call bound to the task's parameters, defaults included, so that
    # sync(7), sync(account_id=7) and sync(7, full=False) are one key. Always a digest,
    # so that the dashboard never shows arguments it masks elsewhere.
    stored = arguments.serialize(*_bound(task, args, kwargs))
    return _digest(json.dumps(stored, sort_keys=True, separators=(",", ":")))


def _bound(task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list, dict]:
    signature = inspect.signature(task.func)
    if task.takes_context:  # the context is not an argument of the call
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:  # a call that does not fit fails when it runs: key it as called
        return list(args), dict(kwargs)
    bound.apply_defaults()
    return [], dict(bound.arguments)


def _digest(text: str) -> str:
    return DIGEST_PREFIX + hashlib.sha256(text.encode()).hexdigest()
