"""Labels of jobs: short strings to find jobs by (a tenant, an import, a customer).

    from steady_queue.labels import labels

    @labels("billing")                      # every job of the task: above @task()
    @task()
    def charge(account_id): ...

    with labels("tenant:7", "import-42"):   # every job enqueued inside the block
        charge.enqueue(7)                    # labels: ["billing", "tenant:7", "import-42"]

A job's labels are its task's static labels, then the labels of every ``with labels()``
block open around the enqueue, outermost first: duplicates dropped, order kept. They
are stored with the job (``Job.labels``, and a row each in ``JobLabel`` for the
indexed ``Job.objects.labelled(all=..., any=...)``) and kept on retries.

The blocks are a context variable: each thread and each asyncio task sees its own
(a task started inside a block inherits it, as ``contextvars`` do). Static labels are
kept by task path like the other task options; the public face is ``steady_queue.labels``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable

from ..compat import Task
from ..exceptions import InvalidLabels
from . import TaskOptions

#: At most this many labels on one job.
MAX_LABELS = 20
#: A label's length, in characters (``JobLabel.label`` holds 100).
MAX_LENGTH = 100

# Task module path -> its static labels; filled when the task's module is imported.
_static: TaskOptions[tuple[str, ...]] = TaskOptions()
# The labels of the ``with labels()`` blocks open in this context, outermost first.
_active: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "steady_queue_labels", default=()
)
# The tokens of the blocks open in this context, innermost last: a block's exit resets
# its own, so one labels() object may be entered by several threads at once.
_entered: contextvars.ContextVar[tuple[contextvars.Token, ...]] = contextvars.ContextVar(
    "steady_queue_label_blocks", default=()
)


class labels:  # a decorator and a context manager: named as a function
    """The labels ``names``, for a task (as a decorator above ``@task()``) or for every
    enqueue inside a ``with`` block (nested blocks add up).

    Each label is a non-empty string of at most ``MAX_LENGTH`` characters, and a job
    carries at most ``MAX_LABELS``: ``InvalidLabels`` otherwise, raised here for the
    names given, or at the enqueue for a job whose labels add up to more.
    """

    def __init__(self, *names: str):
        self.names = checked(names)

    def __call__(self, task: Task) -> Task:
        if not isinstance(task, Task):
            raise TypeError("@labels(...) goes above @task(): it takes a Task, not a function.")
        _static.register(task, checked([*static_labels(task.module_path), *self.names]))
        return task

    def __enter__(self) -> labels:
        token = _active.set(merged(_active.get(), self.names))
        _entered.set((*_entered.get(), token))
        return self

    def __exit__(self, *exc_info) -> None:
        *outer, token = _entered.get()
        _entered.set(tuple(outer))
        _active.reset(token)

    def __repr__(self) -> str:
        return f"labels({', '.join(map(repr, self.names))})"


def static_labels(task_path: str) -> tuple[str, ...]:
    """The labels declared with ``@labels(...)`` for the task at ``task_path``."""
    return _static.get(task_path) or ()


def active_labels() -> tuple[str, ...]:
    """The labels of the ``with labels()`` blocks open here, outermost first."""
    return _active.get()


def labels_for(task_path: str) -> list[str]:
    """A job's labels if the task at ``task_path`` were enqueued here and now."""
    return list(checked(merged(static_labels(task_path), _active.get())))


def merged(first: Iterable[str], then: Iterable[str]) -> tuple[str, ...]:
    """``first`` then ``then``, each label once, in the order first seen."""
    return tuple(dict.fromkeys([*first, *then]))


def checked(names: Iterable[object]) -> tuple[str, ...]:
    """A job's labels: ``names`` without duplicates, each a label, at most ``MAX_LABELS``;
    else ``InvalidLabels``."""
    unique = each_checked(names)
    if len(unique) > MAX_LABELS:
        raise InvalidLabels(f"A job has at most {MAX_LABELS} labels, not {len(unique)}.")
    return unique


def each_checked(names: Iterable[object]) -> tuple[str, ...]:
    """``names`` without duplicates, once each is known to be a label (however many)."""
    names = list(names)
    for name in names:
        if not isinstance(name, str) or not name:
            raise InvalidLabels(f"A label is a non-empty string, not {name!r}.")
        if len(name) > MAX_LENGTH:
            raise InvalidLabels(
                f"A label has at most {MAX_LENGTH} characters; {name[:20]!r}... has {len(name)}."
            )
    return tuple(dict.fromkeys(names))
