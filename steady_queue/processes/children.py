"""The supervisor's children: one slot per configured process, the fork running in each,
and when to start a slot again once its child exited (at once after a recycling, with a
growing back-off after quick crashes)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.utils import timezone

from ..models import Process
from .errors import ProcessExitError, describe_wait_status
from .forking import fork_process
from .interruptible import Interruptible
from .poller import Poller
from .worker import Worker
from .worker.recycling import EXIT_STATUSES, describe

logger = logging.getLogger("steady_queue.processes")

# Children that exit sooner than this after starting count as failing to start.
QUICK_EXIT = 10.0
MAX_RESTART_DELAY = 30.0
SUPERVISE_INTERVAL = 1.0


@dataclass
class Fork:
    process: Poller
    slot: int
    started_at: float


class Children:
    """Fork, reap and restart the supervisor's children; remember the exits to clean up."""

    def __init__(self, factories: list[Callable[[], Poller]]):
        self.factories = factories
        self.forks: dict[int, Fork] = {}
        #: Children exited (name, error) whose rows and jobs are not cleaned up yet.
        self.exited: list[tuple[str, ProcessExitError | None]] = []
        self._restarts: dict[int, float] = {}  # slot -> when to start it again
        self._quick_exits: dict[int, int] = {}
        self._replaced: dict[int, dict] = {}  # slot -> why its last worker was recycled

    def start(self, slot: int, supervisor: Process, parent: Interruptible) -> None:
        """Fork the process of ``slot``; if forking fails, try again later."""
        process = self.factories[slot]()
        process.supervised_by(supervisor, os.getpid())
        if slot in self._replaced and isinstance(process, Worker):
            process.replaced = self._replaced.pop(slot)
        try:
            pid = fork_process(process, parent=parent)
        except OSError as exc:  # out of processes or memory: try again later
            logger.error("Could not fork %s: %s", process, exc)
            self._restarts[slot] = time.monotonic() + MAX_RESTART_DELAY
            return
        self.forks[pid] = Fork(process, slot, time.monotonic())
        logger.info("Forked %s %s (pid %d)", process.kind, process.name, pid)

    def start_due(self, supervisor: Process, parent: Interruptible) -> None:
        """Start again the slots whose restart is due."""
        now = time.monotonic()
        for slot, when in list(self._restarts.items()):
            if when <= now:
                del self._restarts[slot]
                self.start(slot, supervisor, parent)

    def time_to_next_event(self) -> float:
        upcoming = [when - time.monotonic() for when in self._restarts.values()]
        return max(min([SUPERVISE_INTERVAL, *upcoming]), 0)

    def reap(self, *, stopping: bool) -> None:
        """Collect every child that exited; unless ``stopping``, schedule its restart."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if (fork := self.forks.pop(pid, None)) is not None:
                self.exit(fork, pid, status, stopping=stopping)

    def exit(self, fork: Fork, pid: int, status: int, *, stopping: bool) -> None:
        """Record the exit of ``fork``'s child (pid ``pid``, wait status ``status``)."""
        if _recycled(fork, status) and not stopping:
            self._replace_recycled(fork, pid, os.WEXITSTATUS(status))
            return
        clean = os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, *EXIT_STATUSES)
        name = fork.process.name
        error = None if clean else ProcessExitError.from_wait_status(name, pid, status)
        log = logger.info if clean or stopping else logger.warning
        log("%s %s (pid %d) %s", fork.process.kind, name, pid, describe_wait_status(status))
        self.exited.append((name, error))
        if not stopping:
            self._schedule_restart(fork)

    def signal_all(self, signum: int) -> None:
        """Send ``signum`` to every child."""
        for pid in self.forks:
            with contextlib.suppress(ProcessLookupError):  # already gone: reaping will tell
                os.kill(pid, signum)

    def kill_remaining(self, *, stopping: bool) -> None:
        """Kill the children still running (after QUIT) and record their exits."""
        for pid in list(self.forks):
            logger.error("Killing pid %d: it did not stop after QUIT", pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            self.exit(self.forks.pop(pid), pid, status, stopping=stopping)

    def _replace_recycled(self, fork: Fork, pid: int, status: int) -> None:
        """Start a fresh worker in the slot at once: recycling is no crash, no back-off."""
        worker = fork.process
        reason = describe(status, worker.recycling.after_jobs, worker.recycling.above_memory)
        logger.info("Worker %s (pid %d) was %s; starting another", worker.name, pid, reason)
        self.exited.append((worker.name, None))
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


def _recycled(fork: Fork, status: int) -> bool:
    """Whether a worker exited because it was recycled (its own exit status says so)."""
    return (
        isinstance(fork.process, Worker)
        and os.WIFEXITED(status)
        and os.WEXITSTATUS(status) in EXIT_STATUSES
    )
