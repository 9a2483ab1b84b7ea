"""Async tasks the event-loop tests run: short naps, a hold, timeouts, errors, cancellation."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from datetime import timedelta
from pathlib import Path

from steady_queue.compat import task
from steady_queue.context import acancelled, reschedule
from steady_queue.task_options.retries import retry_policy
from steady_queue.task_options.timeouts import timeout

HOLD_LIMIT = 60.0  # no task here outlives a test run by more than this


def append(log_path: str, line: str) -> None:
    # One write() on an O_APPEND file: lines from concurrent runs never interleave.
    with open(log_path, "a") as log:
        log.write(f"{line}\n")


@task()
async def nap(seconds: float = 1.0) -> float:
    await asyncio.sleep(seconds)
    return seconds


@task()
async def hold(log_path: str, label: str, release_path: str) -> str:
    """Await until ``release_path`` exists (or a minute)."""
    append(log_path, f"start {label} {os.getpid()}")
    deadline = time.monotonic() + HOLD_LIMIT
    while not Path(release_path).exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    append(log_path, f"end {label} {os.getpid()}")
    return label


@timeout(timedelta(seconds=0.3))
@task()
async def oversleeps() -> None:
    await asyncio.sleep(HOLD_LIMIT)


@timeout(timedelta(seconds=0.3))
@task()
def sync_oversleeps() -> None:
    time.sleep(HOLD_LIMIT)


@timeout(timedelta(seconds=0.3))
@task()
async def blocks_the_loop(seconds: float = 1.0) -> None:
    """Blocks its event loop in a C call: nothing cancels it before it returns."""
    time.sleep(seconds)


@task()
async def raises(message: str) -> None:
    await asyncio.sleep(0)
    raise ValueError(message)


@task()
async def returns_a_set() -> set:
    return {1}


@task(takes_context=True)
async def until_cancelled(context) -> str:
    """Look every 20 ms: ends (cancelled) once its cancellation is asked for."""
    deadline = time.monotonic() + HOLD_LIMIT
    while time.monotonic() < deadline:
        if await acancelled(context):
            return "saw it"
        await asyncio.sleep(0.02)
    return "never cancelled"


@task()
async def ignores_cancellation() -> None:
    """Never looks: a cancellation interrupts it once its grace is over."""
    await asyncio.sleep(HOLD_LIMIT)


@task()
async def ends_itself_cancelled() -> None:
    raise asyncio.CancelledError("from inside")


@task()
def sync_record(log_path: str, label: str) -> str:
    append(log_path, f"run {label} {os.getpid()}")
    return label


@task()
async def where(log_path: str, label: str) -> str:
    """Record the thread it runs on, and the span current while it runs."""
    from opentelemetry import trace

    span = trace.get_current_span().get_span_context().span_id
    append(log_path, f"{label} {threading.current_thread().name} {span:x}")
    return label


@retry_policy(attempts=2, base_delay=timedelta(0), jitter=0)
@task()
async def fails_then_retries() -> None:
    await asyncio.sleep(0)
    raise ValueError("again")


@task(takes_context=True)
async def reschedules(context) -> None:
    await asyncio.sleep(0)
    reschedule(context, timedelta(minutes=5))


@timeout(timedelta(seconds=30))
@task()
async def times_out_by_itself() -> None:
    """Its own TimeoutError, well within its timeout: not a JobTimeout."""
    async with asyncio.timeout(0.01):
        await asyncio.sleep(HOLD_LIMIT)
