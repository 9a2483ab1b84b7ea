"""Limit how many jobs sharing a key run at once: ``@limits_concurrency`` and its registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

import steady_queue

from ..compat import Task
from . import TaskOptions, key_text, stored_key

# Task module path -> its limit; filled when the task's module is imported.
_registry: TaskOptions[ConcurrencyLimit] = TaskOptions()

#: The longest full key kept as it is (``Job.concurrency_key`` and ``Semaphore.key`` hold
#: 255): keys that fit were always stored verbatim, and the semaphores of jobs enqueued
#: before digests came in must keep matching those enqueued after.
KEY_LENGTH = 255


@dataclass(frozen=True, kw_only=True)
class ConcurrencyLimit:
    """A task's concurrency limit, as ``@limits_concurrency`` declares it.

    ``key`` names the jobs that share slots (a string, or a callable of the task's
    arguments), ``to`` how many of them may run at once, ``duration`` how long a slot
    is guaranteed to its holder (default ``steady_queue.default_concurrency_control_period``),
    ``group`` the tasks that share keys (default: the task's path), and ``on_conflict``
    whether extra jobs wait (``"block"``) or are dropped at enqueue (``"discard"``).
    """

    key: str | Callable[..., Any]
    to: int = 1
    duration: timedelta | None = None
    group: str = ""
    on_conflict: Literal["block", "discard"] = "block"

    @property
    def expires_in(self) -> timedelta:
        """How long a slot is guaranteed to its holder: ``duration``, or the project default."""
        return self.duration or steady_queue.default_concurrency_control_period

    def key_for(self, args: list | tuple, kwargs: dict) -> str:
        """Return the full semaphore key for a call: ``group/key``.

        A key too long for the column, or spelled like a digest, becomes
        ``group/sha256:…``; with a group too long for even that, the digest of the
        whole (which, having no ``/``, meets no other key).
        """
        value = self.key(*args, **kwargs) if callable(self.key) else self.key
        room = KEY_LENGTH - len(self.group) - 1
        full = f"{self.group}/{stored_key(key_text(value), room)}"
        return full if len(full) <= KEY_LENGTH else stored_key(full, 0)


def limits_concurrency(
    *,
    key: str | Callable[..., Any],
    to: int = 1,
    duration: timedelta | None = None,
    group: str | None = None,
    on_conflict: Literal["block", "discard"] = "block",
) -> Callable[[Task], Task]:
    """Allow at most ``to`` jobs with the same ``key`` to run at the same time."""
    if to < 1:
        raise ValueError("limits_concurrency(to=...) must be at least 1.")
    if on_conflict not in ("block", "discard"):
        raise ValueError("limits_concurrency(on_conflict=...) must be 'block' or 'discard'.")

    def decorate(task: Task) -> Task:
        limit = ConcurrencyLimit(
            key=key,
            to=to,
            duration=duration,
            group=group or task.module_path,
            on_conflict=on_conflict,
        )
        _registry.register(task, limit)
        return task

    return decorate


def limit_for(task_path: str) -> ConcurrencyLimit | None:
    """Return the concurrency limit declared for the task at ``task_path``, if any."""
    return _registry.get(task_path)
