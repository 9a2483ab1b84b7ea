"""Tasks that log and print, for the tests of a running job's log and live stack."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from steady_queue.compat import task

logger = logging.getLogger("tests.tasks.logging_tasks")


@task()
def chatty(lines: int = 3, level: int = logging.INFO, printed: str = "") -> int:
    """Log ``lines`` records at ``level`` (numbered), print ``printed`` if given."""
    for number in range(1, lines + 1):
        logger.log(level, "line %d of %d", number, lines)
    if printed:
        print(printed)
    return lines


@task()
def levels() -> None:
    logger.debug("a debug record")
    logger.info("an info record")
    logger.warning("a warning record")


@task()
def logs_its_secret(password: str, user: str) -> None:
    logger.info("logging in %s with password=%s", user, password)
    logger.info("the raw secret is %s", password)


@task()
def logs_then_fails() -> None:
    logger.info("about to fail")
    raise RuntimeError("failed after logging")


@task()
def sleeps_until_released(release_path: str, lines: int = 2) -> str:
    """Log ``lines`` records, then sleep until ``release_path`` exists (a live stack's frame)."""
    for number in range(1, lines + 1):
        logger.info("running line %d", number)
    while not Path(release_path).exists():
        time.sleep(0.05)  # the live stack's frame: sleeps_until_released, this line
    return "released"


@task()
async def async_sleeps_until_released(release_path: str) -> str:
    logger.info("async job started")
    while not Path(release_path).exists():
        await asyncio.sleep(0.05)  # the live stack's awaiting frame
    return "released"


@task()
def logs_in_steps(step_path: str, release_path: str) -> str:
    """Log a line, another once ``step_path`` exists, then wait for ``release_path``."""
    logger.info("waiting for the step")
    while not Path(step_path).exists():
        time.sleep(0.05)
    logger.warning("the step was taken")
    while not Path(release_path).exists():
        time.sleep(0.05)
    return "done"
