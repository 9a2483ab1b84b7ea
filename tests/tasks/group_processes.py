"""Tasks of batches and workflows run by the real processes (tests/processes/test_batches.py,
test_workflows.py). Each run appends ``run <label> <pid>`` to the file named by
``SQ_GROUPS_LOG`` (the test's RunLog): callbacks are called with the batch id alone, so
the file cannot be an argument.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

from steady_queue.compat import task
from steady_queue.task_options.retries import retry_policy
from steady_queue.workflows import upstream_results
from tests.tasks.processes import append


def logged(label: str) -> None:
    append(os.environ["SQ_GROUPS_LOG"], f"run {label} {os.getpid()}")


@task()
def member(label: str, seconds: float = 0.0) -> str:
    time.sleep(seconds)  # long enough that a killed worker is often in the middle of one
    logged(label)
    return label


# A worker killed under it reruns it (at_least_once): its batch then counts one success.
@retry_policy(attempts=5, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def rerun_member(label: str, seconds: float = 0.0) -> str:
    time.sleep(seconds)
    logged(label)
    return label


# Callbacks are rerun too if their worker is killed, so that every one ends succeeded.
@retry_policy(attempts=5, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def finished(batch_id: int) -> int:
    logged(f"on_finish-{batch_id}")
    return batch_id


@retry_policy(attempts=5, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def succeeded(batch_id: int) -> int:
    logged(f"on_success-{batch_id}")
    return batch_id


@retry_policy(attempts=5, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def failed(batch_id: int) -> int:
    logged(f"on_failure-{batch_id}")
    return batch_id


@task()
def seed(label: str, value: int) -> int:
    logged(label)
    return value


@task(takes_context=True)
def plus(context, label: str, upstream: str, amount: int) -> int:
    logged(label)
    return upstream_results(context)[upstream] + amount


@task(takes_context=True)
def times(context, label: str, upstream: str, factor: int) -> int:
    logged(label)
    return upstream_results(context)[upstream] * factor


@task(takes_context=True)
def collect(context, label: str) -> dict:
    logged(label)
    return upstream_results(context)


@task()
def fails_while(label: str, flag: str) -> str:
    """Fail as long as the file ``flag`` exists: the test removes it before a retry."""
    logged(label)
    if Path(flag).exists():
        raise RuntimeError(f"{label} failed: {flag} exists")
    return label


@task()
def step(label: str) -> str:
    logged(label)
    return label
