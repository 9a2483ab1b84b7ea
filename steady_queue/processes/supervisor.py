"""The supervisor: forks the configured processes, watches them and stops them on signals.

Forking, reaping and restarting its children is ``children``'s part.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from functools import partial

import steady_queue

from ..configuration import Options, seconds
from ..health.liveness import LivenessFile
from ..models import Process
from ..models.task_rollup import tally
from . import maintenance
from .base import HANDLED_SIGNALS, Base
from .children import Children
from .dispatcher import Dispatcher
from .outages import OutageLog, close_connections
from .pidfile import Pidfile
from .poller import Poller
from .scheduler import Scheduler
from .threads import ThreadChildren
from .worker import Worker

logger = logging.getLogger("steady_queue.processes")

# How long children get to deregister after QUIT before they are killed.
QUIT_TIMEOUT = 10.0
# How the children run: forked (the default), or as threads of this process.
MODES = {"fork": Children, "async": ThreadChildren}


class Supervisor(Base):
    """Fork one child per configured process, replace those that die, stop them on signals.

    TERM/INT: children get TERM and up to ``shutdown_timeout`` to finish their jobs, then
    QUIT. QUIT: children get QUIT at once. The supervisor never runs threads, so that
    forking is safe, and it closes its database connections before each fork.

    ``mode="async"`` runs the children as threads of this process instead
    (``threads.ThreadChildren``); in a thread itself (``in_thread``, embedded in a web
    server) it installs no signal handlers, no pidfile and no liveness file: whoever
    started it calls ``stop()`` or ``quit()``.
    """

    kind = Process.Kind.SUPERVISOR

    def __init__(self, factories: list[Callable[[], Poller]], *, mode: str = "fork"):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"Unknown mode {mode!r}: use one of {', '.join(MODES)}")
        self.factories = factories
        self.mode = mode
        self.children = MODES[mode](factories)
        self._received: list[int] = []
        self._next_heartbeat = 0.0
        self._next_prune = 0.0
        self._outage = OutageLog(logger, "Supervisor maintenance")

    @classmethod
    def from_configuration(
        cls,
        options: Options,
        *,
        only_workers: bool = False,
        only_dispatchers: bool = False,
        skip_recurring: bool = False,
        mode: str = "fork",
    ) -> Supervisor:
        """Build the supervisor of the processes ``options`` describe, minus those skipped."""
        factories: list[Callable[[], Poller]] = []
        if not only_dispatchers:
            for config in options.configured_workers:
                factories += [partial(Worker.from_configuration, config)] * config.processes
        if not only_workers:
            for config in options.configured_dispatchers:
                factories.append(partial(Dispatcher.from_configuration, config))
            if not skip_recurring:
                factories.append(Scheduler)
        return cls(factories, mode=mode)

    def metadata(self) -> dict:
        pidfile = None if self.in_thread else steady_queue.supervisor_pidfile
        return {"pidfile": pidfile, "processes": len(self.factories), "mode": self.mode}

    def start(self) -> None:
        """Supervise until a signal stops us, then stop every child."""
        standalone = not self.in_thread  # embedded, the web server has its own
        self.pidfile = Pidfile((standalone and steady_queue.supervisor_pidfile) or "")
        if standalone and steady_queue.supervisor_pidfile:
            self.pidfile.setup()
        self.liveness = LivenessFile(steady_queue.liveness_file if standalone else None)
        self.liveness.touch()
        try:
            self.boot()
            if self.process is not None:
                self.supervise()
        finally:
            self.shutdown()

    def boot(self) -> None:
        self.open_wakeup_pipe()
        self.install_signal_handlers()
        self.register()
        if self.process is None:
            return
        self._maintain()
        self.run_hooks("start")
        logger.info("Started %s supervising %d processes", self, len(self.factories))
        for slot in range(len(self.factories)):
            if self.stopping:
                break
            self.children.start(slot, self.process, parent=self)

    def install_signal_handlers(self) -> None:
        if self.in_thread:
            return
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, self._on_signal)
        # A child's exit wakes the loop, so that it is reaped and replaced at once.
        signal.signal(signal.SIGCHLD, lambda *_: self.wake_up())

    def supervise(self) -> None:
        while not self.stopping:
            self.children.reap(stopping=self.stopping)
            self.children.start_due(self.process, parent=self)
            self._maintain()
            self.liveness.touch()
            self.interruptible_sleep(self.children.time_to_next_event())

    def shutdown(self) -> None:
        self._log_signals()
        if self.quitting:
            self._terminate_immediately()
        else:
            self._terminate_gracefully()
        if self.process is not None:
            self.run_hooks("stop")
            self._deregister_after_children()
        self.pidfile.delete()
        self.liveness.delete()
        close_connections()
        logger.info("Stopped %s", self)

    def _deregister_after_children(self) -> None:
        try:
            self._clean_up_exited()
        except Exception as exc:
            logger.warning("Could not clean up after exited children: %s", exc)
        self.deregister()

    # Signals

    def _on_signal(self, signum: int, frame) -> None:
        # Only flags and a wake-up here: the main loop may be anywhere, even mid-query.
        if signum == signal.SIGQUIT or self.stopping:  # a second TERM/INT quits too
            self.quitting = True
        self.stopping = True
        self._received.append(signum)
        self.wake_up()

    def _log_signals(self) -> None:
        while self._received:
            name = signal.Signals(self._received.pop(0)).name
            logger.info("Received %s: stopping %s", name, "now" if self.quitting else "gracefully")

    # Maintenance

    def _maintain(self) -> None:
        """Heartbeat, prune and clean up after exited children, when due."""
        try:
            now = time.monotonic()
            if now >= self._next_heartbeat:
                self._heartbeat()
                self._next_heartbeat = now + seconds(steady_queue.process_heartbeat_interval)
            self._clean_up_exited()
            tally.flush()  # the failures of crashed children's jobs, counted here
            if now >= self._next_prune:
                maintenance.prune_dead_processes(excluding=self.process)
                maintenance.fail_orphaned_executions()
                self._next_prune = now + seconds(steady_queue.process_alive_threshold)
            self._outage.succeeded()
        except Exception as exc:
            self._outage.failed(exc)

    def _heartbeat(self) -> None:
        if not self.process.heartbeat():
            # Pruned while unresponsive: take the same row back, our children point to it.
            logger.warning("%s was pruned; registering again", self)
            self.process.save(force_insert=True)

    def _clean_up_exited(self) -> None:
        exited = self.children.exited
        while exited:
            maintenance.clean_up_after(self.process, *exited[0])
            exited.pop(0)

    # Stopping

    def _terminate_gracefully(self) -> None:
        self._signal_forks(signal.SIGTERM)
        self._wait_for_forks(seconds(steady_queue.shutdown_timeout), until_quit=True)
        if self.children.forks:
            self._terminate_immediately()

    def _terminate_immediately(self) -> None:
        self._signal_forks(signal.SIGQUIT)
        self._wait_for_forks(QUIT_TIMEOUT)
        self.children.kill_remaining(stopping=self.stopping)

    def _wait_for_forks(self, timeout: float, *, until_quit: bool = False) -> None:
        deadline = time.monotonic() + timeout
        while self.children.forks and time.monotonic() < deadline:
            self.children.reap(stopping=self.stopping)
            self._log_signals()
            if until_quit and self.quitting:
                return
            self.interruptible_sleep(min(deadline - time.monotonic(), 0.5))
        self.children.reap(stopping=self.stopping)

    def _signal_forks(self, signum: int) -> None:
        self.children.signal_all(signum)
