"""Tasks of the frozen-worker tests: each run appends when it started and ended, and where.

Lines are ``<start|end> <label> <pid> <time.time()>``, written with one append each.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency
from tests.tasks.processes import HOLD_LIMIT, append


def _stamp(log_path: str, event: str, label: str) -> None:
    append(log_path, f"{event} {label} {os.getpid()} {time.time():.6f}")


@limits_concurrency(key="frozen-worker", to=1)
@task()
def limited(log_path: str, label: str, release_path: str = "", seconds: float = 0.0) -> str:
    """Hold the key's one slot until ``release_path`` exists, or for ``seconds``."""
    _stamp(log_path, "start", label)
    deadline = time.monotonic() + (HOLD_LIMIT if release_path else seconds)
    while time.monotonic() < deadline and not (release_path and Path(release_path).exists()):
        time.sleep(0.02)
    _stamp(log_path, "end", label)
    return label


@task()
def unlimited(log_path: str, label: str) -> str:
    _stamp(log_path, "start", label)
    _stamp(log_path, "end", label)
    return label
