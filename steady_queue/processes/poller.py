"""The loop of every supervised process: poll, sleep, repeat until told to stop."""

from __future__ import annotations

import abc
import logging
import time
from datetime import timedelta

import steady_queue

from ..configuration import seconds
from .base import Base
from .heartbeat import Heartbeat
from .outages import RETRY_INTERVAL, OutageLog, close_connections

logger = logging.getLogger("steady_queue.processes")

# How often a sleeping process checks that its supervisor is still there.
SUPERVISOR_CHECK_INTERVAL = 1.0


class Poller(Base, abc.ABC):
    """A supervised process built around ``poll()``; Worker, Dispatcher and Scheduler.

    ``start()`` runs in the forked child: it registers the process, starts its
    heartbeat, calls ``poll()`` until the process is told to stop, sleeping as long as
    ``poll()`` asks (``wake_up()`` cuts a sleep short), then deregisters it.

    Subclasses set ``kind`` and implement ``poll()``; they may extend ``metadata()``
    and override the ``on_boot()`` / ``on_shutdown()`` hooks. A database error in
    ``poll()`` is logged and retried after a pause: the process keeps running.
    """

    def __init__(self, *, polling_interval: float | timedelta):
        super().__init__()
        self.polling_interval = seconds(polling_interval)
        self._heartbeat: Heartbeat | None = None

    @abc.abstractmethod
    def poll(self) -> float:
        """Do one round of work; return how many seconds to sleep before the next."""

    def on_boot(self) -> None:
        """Called once registered, before the first poll."""

    def on_shutdown(self) -> None:
        """Called when the loop ends, before deregistering (``self.quitting`` says how)."""

    def metadata(self) -> dict:
        return {**super().metadata(), "polling_interval": self.polling_interval}

    def start(self) -> int:
        """Run this process until it is told to stop; return its exit code."""
        try:
            self.boot()
            if self.process is not None:
                self.run()
        finally:
            self.shutdown()
        return self.exit_status

    def boot(self) -> None:
        self.open_wakeup_pipe()
        self.install_signal_handlers()
        self.register()
        if self.process is None:
            return
        interval = seconds(steady_queue.process_heartbeat_interval)
        self._heartbeat = Heartbeat(self, interval)
        self._heartbeat.start()
        self.on_boot()
        self.run_hooks("start")
        logger.info("Started %s", self)

    def run(self) -> None:
        outage = OutageLog(logger, f"Polling in {self}")
        while not self.stopping:
            self.check_supervisor()
            try:
                delay = self.poll()
                outage.succeeded()
            except Exception as exc:
                outage.failed(exc)
                delay = RETRY_INTERVAL
            self.sleep(delay)

    def still_registered(self) -> bool:
        """False once this process knows it was pruned: it is stopping, and must start nothing.

        Its row is gone and its claimed jobs were failed; it exits, and its supervisor
        starts another in its place.
        """
        return self._heartbeat is None or self._heartbeat.confirm()

    def sleep(self, delay: float) -> None:
        """Sleep up to ``delay`` seconds; a wake-up, a stop or a lost supervisor ends it."""
        deadline = time.monotonic() + delay
        while not self.stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.interruptible_sleep(min(remaining, SUPERVISOR_CHECK_INTERVAL)):
                return
            self.check_supervisor()

    def shutdown(self) -> None:
        if self.process is not None:
            self.run_hooks("stop")
            self.on_shutdown()
            if self._heartbeat is not None:
                self._heartbeat.stop()
            # An orphan's unfinished jobs stay claimed: they failed along with its
            # supervisor, and the next supervisor's orphan sweep records that.
            self.deregister(release_claims=not self.orphaned)
        close_connections()
        logger.info("Stopped %s", self)
