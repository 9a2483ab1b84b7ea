"""What the running tasks of this process know of their cancellation.

``Job.cancel()`` on a running job sets ``cancel_requested_at``. The task finds out
through ``steady_queue.context.cancelled()``, which asks the database at most every
``CHECK_INTERVAL`` per job (a task may call it in a tight loop), and through
``report_progress``. Once a run has seen the request, it ends as cancelled however it
ends: the runner asks ``seen()`` when the task returns or raises.

The question itself is the caller's (``ask``): this module keeps what the process
knows, below the models.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CHECK_INTERVAL = 0.25

_lock = threading.Lock()
_known: dict[int, tuple[float, bool]] = {}  # job id -> (when asked, requested)


def requested(job_id: int, ask: Callable[[], bool]) -> bool:
    """Whether cancelling the job ``job_id`` was asked for: ``ask()`` (the database) at
    most every CHECK_INTERVAL, the last answer in between."""
    now = time.monotonic()
    with _lock:
        known = _known.get(job_id)
    if known is not None and (known[1] or now - known[0] < CHECK_INTERVAL):
        return known[1]
    asked = ask()
    with _lock:
        _known[job_id] = (now, asked)
    return asked


def mark(job_id: int) -> None:
    """Note that the run of ``job_id`` learnt of its cancellation another way."""
    with _lock:
        _known[job_id] = (time.monotonic(), True)


def forget(job_id: int) -> None:
    """Start a run of ``job_id`` knowing nothing of an earlier one's cancellation.

    Keys are job ids: another queue database's job of the same id, or a check made
    outside any run, must not make this run end as cancelled.
    """
    with _lock:
        _known.pop(job_id, None)


def seen(job_id: int) -> bool:
    """Whether the run of ``job_id`` learnt it was cancelled; forgets the job."""
    with _lock:
        known = _known.pop(job_id, None)
    return known is not None and known[1]
