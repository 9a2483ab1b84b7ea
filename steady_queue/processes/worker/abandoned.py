"""Pass the watchdog's "this run's thread is stuck" to the worker that owns the thread.

The watchdog is one per process (``runner.deadlines``) and has one ``on_abandon``
callback. A forked worker is alone in its process, but in async mode and embedded
several workers share one: each is told, and only the owner of the thread (or of the
event loop) acts on it.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from ...runner import deadlines

if TYPE_CHECKING:
    from .process import Worker

_workers: weakref.WeakSet[Worker] = weakref.WeakSet()
_lock = threading.Lock()


def listen(worker: Worker) -> None:
    """Tell ``worker`` of every stuck run of this process (it ignores those not its own)."""
    with _lock:
        _workers.add(worker)
    deadlines.watchdog().on_abandon = _tell_workers


def forget(worker: Worker) -> None:
    with _lock:
        _workers.discard(worker)


def _tell_workers(thread: int, run: deadlines.Run) -> None:
    with _lock:
        workers = list(_workers)
    for worker in workers:
        worker._abandoned(thread, run)
