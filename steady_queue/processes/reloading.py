"""``manage.py steady_queue --reload``: restart the supervisor when a Python file changes.

Django's autoreloader protocol, as ``runserver`` uses it: the command as started (the
outer process) runs itself again as a child with ``RUN_MAIN=true``, and again each time
that child exits with status 3. The child watches the files and forks the process that
runs the supervisor (``reload_watcher``); on a change it stops the supervisor as TERM
does, so that running jobs finish or are released within ``shutdown_timeout``, and
then exits with 3.

Unlike ``runserver``'s outer process, which kills its child when it gets TERM, this one
passes TERM, INT and QUIT on, so that a stop is graceful all the way down. The child
runs in a session of its own: a terminal's Ctrl-C reaches the supervisor once, through
this chain, and not also directly (twice would mean "stop at once").
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

from django.utils import autoreload

from .base import HANDLED_SIGNALS
from .outages import close_connections
from .reload_watcher import RELOAD_EXIT_CODE, watch_and_fork

logger = logging.getLogger("steady_queue.processes")

# The exit status of a child that TERM ended before it could pass TERM on (as a shell says).
STOPPED_BY_TERM = 128 + signal.SIGTERM


def reload_on_changes() -> None:
    """Return in a fork that runs the supervisor, restarted on changes; exit anywhere else."""
    if os.environ.get(autoreload.DJANGO_AUTORELOAD_ENV) == "true":
        watch_and_fork()
        return
    close_connections()  # the children open their own
    sys.exit(Restarter(autoreload.get_child_arguments()).run())


class Restarter:
    """Run the command again as a child, and again each time it exits for a reload."""

    def __init__(self, arguments: list[str]):
        self.arguments = arguments
        self.environment = {**os.environ, autoreload.DJANGO_AUTORELOAD_ENV: "true"}
        self.child: subprocess.Popen | None = None
        self.pending: list[int] = []
        self.stop_requested = False

    def run(self) -> int:
        """Restart the child until it exits for another reason or we are asked to stop."""
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, self._on_signal)
        while (code := self._run_child()) == RELOAD_EXIT_CODE and not self.stop_requested:
            logger.info("Restarting Steady Queue after a change")
        if self.stop_requested and code in (RELOAD_EXIT_CODE, STOPPED_BY_TERM):
            return 0  # stopped during a reload, or before a supervisor started: as asked
        return code

    def _run_child(self) -> int:
        child = subprocess.Popen(self.arguments, env=self.environment, start_new_session=True)
        with _signals_blocked():  # a handler sees either no child or this one
            self.child = child
            for signum in self.pending:  # received while it was starting
                child.send_signal(signum)
            self.pending.clear()
        code = child.wait()
        with _signals_blocked():
            self.child = None
        return code if code >= 0 else 128 - code  # killed by a signal: as a shell says

    def _on_signal(self, signum: int, frame) -> None:
        self.stop_requested = True
        # The same stop for the command, and a child still starting ends quietly on TERM
        # where INT would raise KeyboardInterrupt.
        signum = signal.SIGTERM if signum == signal.SIGINT else signum
        if self.child is None:
            self.pending.append(signum)
        else:
            self.child.send_signal(signum)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
