"""``@transactional`` tasks: each writes a ``TransactionalWrite`` row, then ends its way."""

from __future__ import annotations

import logging
import os
import time
import zlib
from datetime import timedelta
from pathlib import Path

from steady_queue.compat import task
from steady_queue.context import cancelled
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy
from steady_queue.task_options.timeouts import timeout
from steady_queue.task_options.transactional import transactional
from tests.models import TransactionalWrite
from tests.tasks.processes import HOLD_LIMIT, append


@transactional
@task()
def write(token: str, fail: bool = False) -> str:
    TransactionalWrite.objects.create(token=token)
    if fail:
        raise ValueError(f"failed after writing {token}")
    return token


@transactional
@task()
def write_log_and_fail(token: str) -> None:
    TransactionalWrite.objects.create(token=token)
    logging.getLogger(__name__).warning("wrote %s, failing now", token)
    raise ValueError(f"failed after writing {token}")


@transactional
@task()
def write_then_return_nan(token: str) -> float:
    TransactionalWrite.objects.create(token=token)
    return float("nan")  # no database stores it as JSON: the run fails after the body


@transactional
@timeout(timedelta(seconds=0.3))
@task()
def write_then_overrun(token: str) -> None:
    TransactionalWrite.objects.create(token=token)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # Python code: the watchdog's interrupt lands here
        pass


@transactional
@task(takes_context=True)
def write_until_cancelled(context, token: str, started_path: str) -> str:
    TransactionalWrite.objects.create(token=token)
    Path(started_path).touch()
    deadline = time.monotonic() + 30
    while not cancelled(context) and time.monotonic() < deadline:
        time.sleep(0.02)
    return token  # returns: the run ends cancelled all the same


@transactional
@limits_concurrency(key=lambda token: "one", to=1)
@task()
def write_limited(token: str) -> str:
    TransactionalWrite.objects.create(token=token)
    return token


@transactional(using="billing")
@task(backend="billing")
def billing_noop() -> str:
    return "billing"


# Run by real workers (tests/processes/test_transactional.py).


@transactional
@retry_policy(attempts=2, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task(takes_context=True)
def write_and_hold(context, log_path: str, token: str, release_path: str) -> str:
    """Write, then hold until ``release_path`` exists; the attempt is kept with the row."""
    TransactionalWrite.objects.create(token=token, attempt=context.attempt)
    append(log_path, f"wrote {token} {os.getpid()}")
    deadline = time.monotonic() + HOLD_LIMIT
    while not Path(release_path).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return token


@transactional
@retry_policy(attempts=10, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task(takes_context=True)
def write_under_load(context, log_path: str, token: str) -> str:
    """Write, log, then fail one attempt in five (by token and attempt), else succeed."""
    TransactionalWrite.objects.create(token=token, attempt=context.attempt)
    append(log_path, f"wrote {token} {os.getpid()}")
    time.sleep(0.01)  # room for a kill between the write and the commit
    if zlib.crc32(f"{token}/{context.attempt}".encode()) % 5 == 0:
        raise ValueError(f"{token} fails attempt {context.attempt} after writing")
    return token


# With steady_queue.durable (tests/runner/test_transactional.py).


def _nap(context) -> None:
    # Through a helper: what the decoration's look at the task's own code cannot see.
    from steady_queue import durable

    durable.sleep(context, timedelta(seconds=60))


@transactional
@task(takes_context=True)
def write_then_sleep(context, token: str) -> None:
    TransactionalWrite.objects.create(token=token)
    _nap(context)


@transactional
@task(takes_context=True)
def step_then(context, token: str, fail: bool) -> str:
    from steady_queue.durable import step

    step(context, "write", lambda: TransactionalWrite.objects.create(token=token).token)
    if fail:
        raise ValueError(f"failed after the step of {token}")
    return token


@transactional
@task()
def write_and_enqueue(token: str, fail: bool) -> str:
    """Its follow-up task is enqueued in its transaction: it exists only if the body committed."""
    from tests import tasks

    TransactionalWrite.objects.create(token=token)
    tasks.noop.enqueue()
    if fail:
        raise ValueError(f"failed after enqueueing for {token}")
    return token
