"""Tasks whose outcome is hard to record: text the database refuses, escaping exceptions.

Each run appends a line to the file named by ``SQ_FINISH_LOG`` (when set), so a test can
count runs independently of the database it is checking.
"""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import retry_policy

NUL = "a\x00b"
SURROGATE = os.fsdecode(b"caf\xff")  # a lone surrogate, as from a non-UTF-8 file name


def _note(label: str) -> None:
    if path := os.environ.get("SQ_FINISH_LOG"):
        with open(path, "a") as log:
            log.write(f"run {label} {os.getpid()}\n")


class Interrupted(BaseException):
    """A BaseException that is not SystemExit, as a library's own KeyboardInterrupt."""


@task()
def returns_nul():
    _note("returns_nul")
    return {"text": NUL}


@task()
def returns_surrogate():
    _note("returns_surrogate")
    return SURROGATE


@task()
def raises_nul():
    _note("raises_nul")
    raise ValueError(NUL)


@task()
def raises_surrogate():
    _note("raises_surrogate")
    raise OSError(f"cannot open {SURROGATE}")


@task()
async def cancelled():
    _note("cancelled")
    raise asyncio.CancelledError("cancelled from inside")


@task()
def interrupted():
    _note("interrupted")
    raise Interrupted("stop")


@task()
def fine(label: str = "fine"):
    _note(label)
    return label


@limits_concurrency(key=lambda key, seconds=0: key, to=1)
@task()
def limited(key: str, seconds: float = 0):
    time.sleep(seconds)
    _note(f"limited-{key}")
    return key


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0)
@task()
def retried_returns_nul():
    _note("retried_returns_nul")
    return NUL
