"""Tasks whose enqueue raises: a key function that always fails, one that fails as an
unreachable database does while asked to (for the recurring tasks' failure tests)."""

from __future__ import annotations

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency


def _broken_key(label: str = "") -> str:
    raise TypeError(f"cannot compute a concurrency key for {label!r}")


@limits_concurrency(key=_broken_key, to=1)
@task()
def broken_key(label: str = "") -> str:
    return label


# While True, enqueueing ``unreachable`` fails as when the database cannot be reached.
UNREACHABLE = {"now": False}


def _unreachable_key() -> str:
    from django.db import OperationalError

    if UNREACHABLE["now"]:
        raise OperationalError("server closed the connection unexpectedly")
    return "unreachable"


@limits_concurrency(key=_unreachable_key, to=1)
@task()
def unreachable() -> None:
    return None
