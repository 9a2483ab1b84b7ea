"""Wake an idle worker the moment its SQLite database is written, without a query.

SQLite cannot notify, and polling it every few milliseconds would spend the single
writer's time on empty transactions. But a commit shows in the database's files
(``steady_queue.storage.file_changes``): a thread that looks at them every
``WATCH_INTERVAL`` (two stat() calls, no query, no lock) wakes the worker when they
changed. The worker then polls, and otherwise sleeps long
(``pacing.Signalled``): while nothing is written, it sends no query but its heartbeat.

Its own writes wake it too (a claim, a finish); that costs one empty poll each, and
only while it works.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import storage
from ..storage.file_changes import DatabaseFiles

if TYPE_CHECKING:
    from .worker import Worker

logger = logging.getLogger("steady_queue.processes")

# How often the files are looked at: the added pickup latency is half of it on average.
WATCH_INTERVAL = 0.005


class ChangeWatcher(threading.Thread):
    """Call ``on_change()`` on this thread each time ``files`` tell of a write."""

    def __init__(self, *, name: str, files: DatabaseFiles, on_change: Callable[[], None]):
        super().__init__(name=f"{name}-watcher", daemon=True)
        self.files = files
        self._on_change = on_change
        self._stopped = threading.Event()

    def stop(self, timeout: float = 2.0) -> None:
        """End the thread."""
        self._stopped.set()
        if self.is_alive():
            self.join(timeout)

    def run(self) -> None:
        while not self._stopped.wait(WATCH_INTERVAL):
            try:
                changed = self.files.changed()
            except OSError as exc:  # the directory is unreadable for now: look again
                logger.debug("Watching %s: %s", self.files.path, exc)
                continue
            if changed:
                self._on_change()


def for_worker(worker: Worker) -> ChangeWatcher | None:
    """A watcher that wakes ``worker`` while it has an idle thread; None without files."""
    files = storage.database_files()
    if files is None:
        return None

    def on_change() -> None:
        if worker.pool.idle_threads > 0:
            worker.wake_up()

    return ChangeWatcher(name=worker.name, files=files, on_change=on_change)


def start_for_worker(worker: Worker) -> ChangeWatcher | None:
    """Start a watcher for ``worker`` where the database has files to watch; None elsewhere."""
    watcher = for_worker(worker)
    if watcher is not None:
        watcher.start()
    return watcher


def stop(watcher: ChangeWatcher | None) -> None:
    """Stop ``watcher`` if there is one."""
    if watcher is not None:
        watcher.stop()
