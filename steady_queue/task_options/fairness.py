"""Fair share: ``@fair`` and its registry; a tenant's flood never starves another's jobs.

    from steady_queue.fairness import fair, Fairness

    @fair(key=lambda account_id, **kw: account_id, weight=1)
    @task()          # or, on Django 6.1+, @task(fairness=Fairness(key=..., weight=...))
    def sync_account(account_id): ...

Within one queue and one priority, ready jobs of fair tasks are claimed round-robin
across their keys in proportion to the keys' weights; within a key, in enqueue order.
A job's key is computed when it is enqueued and kept in ``Job.fairness_key``; its place
in the claim order is written when it becomes ready (``models/fair_share.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..compat import Task
from ..exceptions import FairnessKeyError
from . import TaskOptions, key_text, stored_key

logger = logging.getLogger("steady_queue.fairness")

# Task module path -> its declaration; filled when the task's module is imported.
_registry: TaskOptions[Fairness] = TaskOptions()

#: Keys longer than this are kept as their digest (``Job.fairness_key`` holds 255).
READABLE_LENGTH = 200


@dataclass(frozen=True, kw_only=True)
class Fairness:
    """Share a queue fairly between the keys ``key`` returns, in proportion to ``weight``.

    ``key`` receives the task's arguments as called and returns the tenant (a model
    instance keys by its model and primary key). ``weight`` is a positive whole number,
    or a function of the key's text returning one.
    """

    key: Callable[..., Any]
    weight: int | Callable[[str], int] = 1

    def __post_init__(self) -> None:
        if not callable(self.key):
            raise TypeError(
                f"Fairness(key=...) must be a function of the task's arguments, not {self.key!r}."
            )
        if not callable(self.weight):
            check_weight(self.weight, "Fairness(weight=...)")

    def key_for(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """The job's key (``Job.fairness_key``) for calling ``task`` with these arguments."""
        try:
            value = self.key(*args, **kwargs)
        except Exception as exc:
            raise FairnessKeyError(
                f"Could not compute the fairness key of task {task.module_path}: {exc!r}"
            ) from exc
        return stored_key(key_text(value), READABLE_LENGTH)

    def weight_for(self, task_path: str, key: str) -> int:
        """The declared weight of ``key``; 1, with a warning, when the weight function fails."""
        if not callable(self.weight):
            return self.weight
        try:
            weight = self.weight(key)
            check_weight(weight, "The weight function")
        except Exception as exc:
            logger.warning(
                "The weight function of task %s failed for key %r (%r): weight 1 is used.",
                task_path,
                key,
                exc,
                extra={"task_path": task_path, "fairness_key": key},
            )
            return 1
        return weight


def check_weight(weight: object, what: str) -> None:
    """Refuse a weight that is not a whole number of at least 1."""
    if isinstance(weight, bool) or not isinstance(weight, int):
        raise TypeError(f"{what} must be a whole number, not {weight!r}.")
    if weight < 1:
        raise ValueError(f"{what} must be at least 1, not {weight}.")


def fair(
    *, key: Callable[..., Any], weight: int | Callable[[str], int] = 1
) -> Callable[[Task], Task]:
    """Share the task's queue fairly between the keys ``key`` returns (see ``Fairness``)."""
    declaration = Fairness(key=key, weight=weight)

    def decorate(task: Task) -> Task:
        if not isinstance(task, Task):
            raise TypeError("@fair(...) goes above @task(): it takes a Task, not a function.")
        _registry.register(task, declaration)
        return task

    return decorate


def register(task: Task, declaration: object) -> None:
    """Declare the fairness given as ``@task(fairness=...)`` (Django 6.1+)."""
    check_declaration(declaration)
    _registry.register(task, declaration)


def check_declaration(declaration: object) -> None:
    """Refuse anything but a ``Fairness(...)`` given to ``@task(fairness=...)``."""
    if not isinstance(declaration, Fairness):
        raise TypeError(f"@task(fairness=...) takes a Fairness(...), not {declaration!r}.")


def fairness_for(task_path: str) -> Fairness | None:
    """Return the fairness declared for the task at ``task_path``, if any."""
    return _registry.get(task_path)


def in_use() -> bool:
    """Whether this process has imported a ``@fair`` task.

    While none is, ready jobs keep the FIFO order and cost no statement more; once one
    is, every job made ready here gets its place in the fair order (jobs of other tasks
    as one more key, ``""``).
    """
    return bool(_registry.values())
