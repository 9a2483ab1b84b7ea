"""The supervisor: forks the configured processes, watches them and stops them on signals."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from django.utils import timezone

import steady_queue

from ..configuration import Options, seconds
from ..health.liveness import LivenessFile
from ..models import Process
from ..models.task_rollup import tally
from . import maintenance
from .base import HANDLED_SIGNALS, Base
from .dispatcher import Dispatcher
from .errors import ProcessExitError, describe_wait_status
from .forking import fork_process
from .outages import OutageLog, close_connections
from .pidfile import Pidfile
from .poller import Poller
from .recycling import EXIT_STATUSES, describe
from .scheduler import Scheduler
from .worker import Worker

logger = logging.getLogger("steady_queue.processes")

# Children that exit sooner than this after starting count as failing to start.
QUICK_EXIT = 10.0
MAX_RESTART_DELAY = 30.0
# How long children get to deregister after QUIT before they are killed.
QUIT_TIMEOUT = 10.0
SUPERVISE_INTERVAL = 1.0


@dataclass
class Fork:
    process: Poller
    slot: int
    started_at: float


class Supervisor(Base):
    """Fork one child per configured process, replace those that die, stop them on signals.

    TERM/INT: children get TERM and up to ``shutdown_timeout`` to finish their jobs, then
    QUIT. QUIT: children get QUIT at once. The supervisor never runs threads, so that
    forking is safe, and it closes its database connections before each fork.
    """

    kind = Process.Kind.SUPERVISOR

    def __init__(self, factories: list[Callable[[], Poller]]):
        super().__init__()
        self.factories = factories
        self.forks: dict[int, Fork] = {}
        self._received: list[int] = []
        self._restarts: dict[int, float] = {}  # slot -> when to start it again
        self._quick_exits: dict[int, int] = {}
        self._exited: list[tuple[str, ProcessExitError | None]] = []
        self._replaced: dict[int, dict] = {}  # slot -> why its last worker was recycled
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
        return cls(factories)

    def metadata(self) -> dict:
        return {"pidfile": steady_queue.supervisor_pidfile, "processes": len(self.factories)}

    def start(self) -> None:
        """Supervise until a signal stops us, then stop every child."""
        self.pidfile = Pidfile(steady_queue.supervisor_pidfile or "")
        if steady_queue.supervisor_pidfile:
            self.pidfile.setup()
        self.liveness = LivenessFile(steady_queue.liveness_file)
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
            self._start_fork(slot)

    def install_signal_handlers(self) -> None:
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, self._on_signal)
        # A child's exit wakes the loop, so that it is reaped and replaced at once.
        signal.signal(signal.SIGCHLD, lambda *_: self.wake_up())

    def supervise(self) -> None:
        while not self.stopping:
            self._reap()
            self._start_due_restarts()
            self._maintain()
            self.liveness.touch()
            self.interruptible_sleep(self._time_to_next_event())

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

    # Forking

    def _start_fork(self, slot: int) -> None:
        process = self.factories[slot]()
        process.supervised_by(self.process, os.getpid())
        if slot in self._replaced and isinstance(process, Worker):
            process.replaced = self._replaced.pop(slot)
        try:
            pid = fork_process(process, parent=self)
        except OSError as exc:  # out of processes or memory: try again later
            logger.error("Could not fork %s: %s", process, exc)
            self._restarts[slot] = time.monotonic() + MAX_RESTART_DELAY
            return
        self.forks[pid] = Fork(process, slot, time.monotonic())
        logger.info("Forked %s %s (pid %d)", process.kind, process.name, pid)

    # Reaping and replacing

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if (fork := self.forks.pop(pid, None)) is not None:
                self._handle_exit(fork, pid, status)

    def _handle_exit(self, fork: Fork, pid: int, status: int) -> None:
        if _recycled(fork, status) and not self.stopping:
            self._replace_recycled(fork, pid, os.WEXITSTATUS(status))
            return
        clean = os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, *EXIT_STATUSES)
        name = fork.process.name
        error = None if clean else ProcessExitError.from_wait_status(name, pid, status)
        log = logger.info if clean or self.stopping else logger.warning
        log("%s %s (pid %d) %s", fork.process.kind, name, pid, describe_wait_status(status))
        self._exited.append((name, error))
        if not self.stopping:
            self._schedule_restart(fork)

    def _replace_recycled(self, fork: Fork, pid: int, status: int) -> None:
        """Start a fresh worker in the slot at once: recycling is no crash, no back-off."""
        worker = fork.process
        reason = describe(status, worker.recycling.after_jobs, worker.recycling.above_memory)
        logger.info("Worker %s (pid %d) was %s; starting another", worker.name, pid, reason)
        self._exited.append((worker.name, None))
        self._quick_exits[fork.slot] = 0
        self._replaced[fork.slot] = {
            "worker": worker.name,
            "reason": reason,
            "at": timezone.now().isoformat(timespec="seconds"),
        }
        self._restarts[fork.slot] = time.monotonic()

    def _schedule_restart(self, fork: Fork) -> None:
        quick = time.monotonic() - fork.started_at < QUICK_EXIT
        failures = self._quick_exits.get(fork.slot, 0) + 1 if quick else 0
        self._quick_exits[fork.slot] = failures
        # A child that keeps dying at start must not turn into a fork loop.
        delay = 0.0 if failures <= 1 else min(2.0 ** (failures - 2), MAX_RESTART_DELAY)
        self._restarts[fork.slot] = time.monotonic() + delay

    def _start_due_restarts(self) -> None:
        now = time.monotonic()
        for slot, when in list(self._restarts.items()):
            if when <= now:
                del self._restarts[slot]
                self._start_fork(slot)

    def _time_to_next_event(self) -> float:
        upcoming = [when - time.monotonic() for when in self._restarts.values()]
        return max(min([SUPERVISE_INTERVAL, *upcoming]), 0)

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
        while self._exited:
            maintenance.clean_up_after(self.process, *self._exited[0])
            self._exited.pop(0)

    # Stopping

    def _terminate_gracefully(self) -> None:
        self._signal_forks(signal.SIGTERM)
        self._wait_for_forks(seconds(steady_queue.shutdown_timeout), until_quit=True)
        if self.forks:
            self._terminate_immediately()

    def _terminate_immediately(self) -> None:
        self._signal_forks(signal.SIGQUIT)
        self._wait_for_forks(QUIT_TIMEOUT)
        for pid in list(self.forks):
            logger.error("Killing pid %d: it did not stop after QUIT", pid)
            self._signal(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            self._handle_exit(self.forks.pop(pid), pid, status)

    def _wait_for_forks(self, timeout: float, *, until_quit: bool = False) -> None:
        deadline = time.monotonic() + timeout
        while self.forks and time.monotonic() < deadline:
            self._reap()
            self._log_signals()
            if until_quit and self.quitting:
                return
            self.interruptible_sleep(min(deadline - time.monotonic(), 0.5))
        self._reap()

    def _signal_forks(self, signum: int) -> None:
        for pid in self.forks:
            self._signal(pid, signum)

    def _signal(self, pid: int, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # already gone: reaping will tell
            os.kill(pid, signum)


def _recycled(fork: Fork, status: int) -> bool:
    """Whether a worker exited because it was recycled (its own exit status says so)."""
    return (
        isinstance(fork.process, Worker)
        and os.WIFEXITED(status)
        and os.WEXITSTATUS(status) in EXIT_STATUSES
    )
