"""Tasks of batches and workflows (tests/test_batches.py, tests/test_workflows.py)."""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.retries import retry_policy
from steady_queue.workflows import upstream_results

# Values a test makes ``import_row`` fail for (then removes to let a retry succeed).
FAILING: set[int] = set()


@task()
def import_row(row_id: int) -> int:
    if row_id in FAILING or row_id < 0:
        raise ValueError(f"row {row_id} is bad")
    return row_id * 10


@retry_policy(attempts=2, base_delay=timedelta(0), jitter=0)
@task()
def flaky_row(row_id: int) -> int:
    if row_id in FAILING:
        FAILING.discard(row_id)
        raise ConnectionError(f"row {row_id}: try again")
    return row_id


@task()
def summarise(batch_id: int) -> int:
    return batch_id


@task()
def alert(batch_id: int) -> int:
    return batch_id


@task()
def celebrate(batch_id: int) -> int:
    return batch_id


@task()
def no_arguments() -> None:
    pass


@task()
def extract(day: str) -> dict:
    return {"day": day, "rows": 3}


@task(takes_context=True)
def transform(context, day: str) -> int:
    return upstream_results(context)["extract"]["rows"] * 2


@task(takes_context=True)
def load(context, day: str) -> int:
    return upstream_results(context)["transform"] + 1


@task(takes_context=True)
def email_report(context) -> dict:
    return upstream_results(context)


@task()
def explode(n: int = 0) -> None:
    raise RuntimeError(f"exploded {n}")


@task()
def step(n: int = 0) -> int:
    return n
