"""The watching half of ``--reload``: fork the supervisor, watch files, stop it on a change.

The supervisor needs the main thread (signals) and no threads around it (it forks), so
it runs in a fork of this process, and this process's main thread runs Django's
reloader (``StatReloader``, or ``WatchmanReloader`` when Watchman runs), which raises
``SystemExit(3)`` when a watched file changes. Before that exit reaches the outer
process, which then starts a fresh copy of the command, the supervisor is stopped as
TERM stops it: its workers finish their jobs within ``shutdown_timeout`` or release
them to the queue, where the new workers claim them again.

Signals are passed on so that the supervisor gets what was asked once: a TERM/INT
during a reload's stop is already being done, a second one (or QUIT) stops it at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from django.utils import autoreload

import steady_queue

from ..configuration import seconds
from .base import HANDLED_SIGNALS
from .forking import _prepare_for_fork
from .supervisor import QUIT_TIMEOUT
from .watched_files import start_watching

logger = logging.getLogger("steady_queue.processes")

# What Django's reloader exits with after a change, and its outer process restarts on.
RELOAD_EXIT_CODE = 3
# Beyond the supervisor's own bounds (shutdown_timeout, then QUIT_TIMEOUT), before it is
# killed: its children stop on their own once it is gone.
KILL_MARGIN = 5.0
# linux/prctl.h: a signal for this process when its parent dies.
PR_SET_PDEATHSIG = 1


def watch_and_fork() -> None:
    """Fork: the fork returns, to run the supervisor; here, watch until it ends, then exit."""
    _prepare_for_fork()
    sys.stdout.flush()  # else what is buffered would be written by both processes
    sys.stderr.flush()
    watcher_pid = os.getpid()
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)  # until they are passed on
    pid = os.fork()
    if pid == 0:
        _stop_with(watcher_pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
        return
    sys.exit(Watcher(pid).run())


class Watcher:
    """Watch the project's files while supervisor ``pid`` runs; stop it gracefully on a change."""

    def __init__(self, pid: int):
        self.pid = pid
        self.parent = os.getppid()
        self.status: int | None = None
        self.requested = 0  # TERM/INT received
        self.sent = 0  # TERM/INT passed on, or sent for a reload
        self.changed: Path | None = None

    def run(self) -> int:
        """Return the supervisor's exit code; raise ``SystemExit(3)`` after a change."""
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, self._on_signal)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
        try:
            self._watch()
        finally:  # a change, a stop, or the supervisor already gone
            self._stop_supervisor()
        code = os.waitstatus_to_exitcode(self.status)
        return code if code >= 0 else 128 - code

    def _watch(self) -> None:
        reloader = autoreload.get_reloader()
        autoreload.file_changed.connect(self._note_change)
        try:
            ticker = start_watching(reloader)
            logger.info(
                "Watching the project's Python files with %s: a change restarts the supervisor",
                type(reloader).__name__,
            )
            self._tick_until_stopped(ticker)
        finally:
            autoreload.file_changed.disconnect(self._note_change)
            reloader.stop()

    def _tick_until_stopped(self, ticker: Iterator[None]) -> None:
        while self._supervisor_running() and not self.requested:
            if os.getppid() != self.parent:
                logger.warning("The command that started %d is gone: stopping", os.getpid())
                return
            next(ticker)  # a change raises SystemExit(3)

    def _note_change(self, sender, file_path: Path, **kwargs) -> None:
        self.changed = file_path  # returns None: the reload goes ahead

    def _stop_supervisor(self) -> None:
        if self._supervisor_running() and not self.sent:
            if self.changed is not None:
                logger.info("%s changed: stopping the supervisor gracefully", self.changed)
            self._send(signal.SIGTERM)
        self._wait_for_supervisor()

    def _wait_for_supervisor(self) -> None:
        timeout = seconds(steady_queue.shutdown_timeout) + QUIT_TIMEOUT + KILL_MARGIN
        deadline = time.monotonic() + timeout
        while self._supervisor_running():
            if time.monotonic() > deadline:
                logger.error("Killing supervisor pid %d: it did not stop", self.pid)
                os.kill(self.pid, signal.SIGKILL)
                _, self.status = os.waitpid(self.pid, 0)
                return
            time.sleep(0.05)

    def _supervisor_running(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is None

    def _on_signal(self, signum: int, frame) -> None:
        if signum == signal.SIGQUIT:
            self._send(signum)
            return
        self.requested += 1
        if self.requested > self.sent:  # else a reload's stop already does what was asked
            # TERM, which the supervisor takes as INT: before it handles them, TERM ends
            # the fork quietly, where INT would raise KeyboardInterrupt.
            self._send(signal.SIGTERM)

    def _send(self, signum: int) -> None:
        if signum != signal.SIGQUIT:
            self.sent += 1
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)


def _stop_with(watcher_pid: int) -> None:
    """Have Linux send TERM when the watcher dies, however it dies: no supervisor lingers."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux: the watcher's stop only
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != watcher_pid:  # it died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)
