"""A thread that keeps a child process's row fresh while its main thread works."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from .outages import OutageLog, close_connections

if TYPE_CHECKING:
    from .base import Base

logger = logging.getLogger("steady_queue.processes")


class Heartbeat(threading.Thread):
    """Record every ``interval`` seconds that ``owner`` is alive; stop it if it was pruned."""

    def __init__(self, owner: Base, interval: float):
        super().__init__(name=f"{owner.name}-heartbeat", daemon=True)
        self.owner = owner
        self.interval = interval
        self._stopped = threading.Event()
        self._outage = OutageLog(logger, f"Heartbeat of {owner}")

    def run(self) -> None:
        try:
            while not self._stopped.wait(self.interval):
                self.beat()
        finally:
            close_connections()

    def beat(self) -> None:
        try:
            alive = self.owner.process.heartbeat()
        except Exception as exc:
            self._outage.failed(exc)
            return
        self._outage.succeeded()
        if not alive:
            logger.warning("%s was pruned (its heartbeat expired); stopping", self.owner)
            self.owner.stop()

    def stop(self, timeout: float = 2.0) -> None:
        self._stopped.set()
        self.join(timeout)
