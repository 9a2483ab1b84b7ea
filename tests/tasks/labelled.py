"""Tasks for the labels and metadata tests (tests/labels/)."""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.context import set_metadata
from steady_queue.labels import labels
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy
from steady_queue.task_options.uniqueness import unique

# Set by tests that run a task in this process: what its run saw.
SEEN: dict[str, object] = {}


@labels("billing")
@task()
def charge(account_id: int) -> int:
    return account_id


@labels("billing", "money")
@task()
def refund(account_id: int) -> int:
    return account_id


@labels("b")
@labels("a", "b")
@task()
def twice() -> None:
    pass


@task()
def plain(value: int = 0) -> int:
    return value


@labels("limited")
@limits_concurrency(key=lambda value: str(value), to=1)
@task()
def limited(value: int) -> int:
    return value


@labels("unique")
@unique(key=lambda value: str(value))
@task()
def unique_one(value: int) -> int:
    return value


@labels("flaky")
@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0)
@task()
def fails(value: int) -> int:
    raise RuntimeError(f"failing {value}")


@task(takes_context=True)
def with_metadata(context, rows: int, source: str) -> dict:
    set_metadata(context, rows_done=rows)
    return set_metadata(context, source=source)


@task(takes_context=True)
def waits_with_metadata(context, path: str) -> int:
    """Stores metadata, then waits until the test has read it from its own connection."""
    import time

    from steady_queue.models import Job

    set_metadata(context, stage="reading", source=path)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if Job.objects.filter(pk=int(context.task_result.id), progress__isnull=False).exists():
            return 1
        time.sleep(0.02)
    return 0
