"""What every Steady Queue process has: a kind, a name, a registered row and signals."""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
from typing import TYPE_CHECKING, ClassVar

from .. import hooks
from .heartbeat import flush_tally
from .interruptible import Interruptible
from .outages import RETRY_INTERVAL, OutageLog

if TYPE_CHECKING:
    from ..models import Process

logger = logging.getLogger("steady_queue.processes")

# Blocked by the supervisor while it forks, so that a child handles them only once it
# has installed its own handlers.
HANDLED_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGQUIT})

DEREGISTER_ATTEMPTS = 3


class Base(Interruptible):
    """A process that registers itself in the processes table and stops on signals.

    ``stop()`` (TERM, INT) asks for a graceful stop: finish what is in flight first.
    ``quit()`` (QUIT) asks for an immediate one: what is in flight goes back to ready.
    """

    kind: ClassVar[str]

    def __init__(self) -> None:
        self.name = f"{self.kind.lower()}-{secrets.token_hex(6)}"
        self.hostname = socket.gethostname()
        self.process: Process | None = None
        self.supervisor: Process | None = None
        self.supervisor_pid: int | None = None
        self.stopping = False
        self.quitting = False
        self.orphaned = False
        # The process's exit status once it stops (a recycled worker's says so).
        self.exit_status = 0
        # Run as a thread of its supervisor's process (async mode, embedded): signals
        # are the process's, not this thread's, and the supervisor cannot vanish alone.
        self.in_thread = False

    def __str__(self) -> str:
        return f"{self.kind} {self.name} (pid {os.getpid()})"

    def metadata(self) -> dict:
        """What the dashboard shows about this process."""
        return {}

    def live_metadata(self) -> dict | None:
        """What the dashboard shows, as of now, written with each heartbeat (None: no change)."""
        return None

    def supervised_by(self, supervisor: Process | None, pid: int) -> None:
        self.supervisor, self.supervisor_pid = supervisor, pid

    def stop(self) -> None:
        """Stop gracefully: finish what is in flight first."""
        self.stopping = True
        self.wake_up()

    def quit(self) -> None:
        """Stop now: what is in flight goes back to the queue."""
        self.quitting = True
        self.stop()

    def install_signal_handlers(self) -> None:
        if self.in_thread:  # only the main thread may; its supervisor stops this one
            return
        signal.signal(signal.SIGTERM, lambda *_: self.stop())
        signal.signal(signal.SIGINT, lambda *_: self.stop())
        signal.signal(signal.SIGQUIT, lambda *_: self.quit())
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)

    def register(self) -> None:
        """Insert this process's row, retrying while the database is unavailable."""
        from ..models import Process

        outage = OutageLog(logger, f"Registering {self}")
        while not self.stopping:
            self.check_supervisor()
            try:
                self.process = Process.register(
                    kind=self.kind,
                    name=self.name,
                    pid=os.getpid(),
                    hostname=self.hostname,
                    supervisor=self.supervisor,
                    metadata=self.metadata(),
                )
                outage.succeeded()
                return
            except Exception as exc:
                outage.failed(exc)
                self.interruptible_sleep(RETRY_INTERVAL)

    def deregister(self, *, release_claims: bool = True) -> None:
        """Remove this process's row (a few attempts: it runs on the way out)."""
        if self.process is None:
            return
        try:
            self._remove_row(release_claims)
        finally:  # what it counted, failed claims included, before it goes
            flush_tally(OutageLog(logger, f"Writing the task counts of {self}"))

    def _remove_row(self, release_claims: bool) -> None:
        outage = OutageLog(logger, f"Deregistering {self}")
        for attempt in range(DEREGISTER_ATTEMPTS):
            try:
                self.process.deregister(release_claims=release_claims)
                return
            except Exception as exc:
                outage.failed(exc)
                if attempt + 1 < DEREGISTER_ATTEMPTS:
                    self.interruptible_sleep(RETRY_INTERVAL)
        logger.error("%s could not deregister; its supervisor or a prune will clean up", self)

    def check_supervisor(self) -> None:
        """Stop when our supervisor is gone: we were reparented, so it died."""
        if self.supervisor_pid is None or os.getppid() == self.supervisor_pid:
            return
        if not self.orphaned:
            logger.warning("%s lost its supervisor (pid %s); stopping", self, self.supervisor_pid)
            self.orphaned = True
            self.stop()

    def run_hooks(self, event: str) -> None:
        hooks.run(event, self)
