"""Tasks for the encryption tests (tests/encryption/, tests/dashboard/test_encrypted.py)."""

from __future__ import annotations

import logging
from datetime import timedelta

from steady_queue.compat import task
from steady_queue.context import report_progress, set_metadata
from steady_queue.encryption import encrypted
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.rate_limits import rate_limit
from steady_queue.task_options.uniqueness import unique

logger = logging.getLogger("tests.encrypted")

# Set by tests that run a task in this process: what its run saw.
SEEN: list[tuple] = []


@encrypted
@task(takes_context=True)
def charge(context, card: str, amount: int = 0) -> dict:
    SEEN.append((card, amount))
    logger.warning("charging card %s", card)
    print(f"printed {card}")
    set_metadata(context, card=card)
    report_progress(context, 1, 2, f"halfway for {card}")
    return {"receipt": f"paid with {card}"}


@encrypted
@task()
def explode(card: str) -> None:
    SEEN.append((card,))
    raise ValueError(f"declined card {card}")


@task()
def by_setting(card: str) -> str:
    """Encrypted by ``STEADY_QUEUE_ENCRYPT_TASKS`` (tests/settings.py), not a decorator."""
    SEEN.append((card,))
    return f"done {card}"


@task()
def plain(card: str) -> str:
    return card


@encrypted
@unique(key=lambda card: card)
@task()
def once_per_card(card: str) -> str:
    return card


@encrypted
@limits_concurrency(key=lambda card: card, to=1)
@task()
def limited(card: str) -> str:
    return card


@encrypted
@rate_limit(to=5, per=timedelta(minutes=1), key=lambda card: card)
@task()
def rate_limited(card: str) -> str:
    return card


@encrypted
@task()
def record_card(path: str, card: str) -> str:
    """Append ``card`` to the file at ``path`` (what a worker process's run saw)."""
    logger.warning("recording card %s", card)
    with open(path, "a") as file:
        file.write(card + "\n")
    return f"recorded {card}"
