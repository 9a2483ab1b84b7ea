"""One queue per Gunicorn master, in a process the master forks for it.

Not in the master itself: the master forks every web worker, and a fork made while
queue threads run copies their locks and open database connections in whatever state
they are (a lock held at that moment stays held in the worker forever). Not in each
worker either: that would be as many queues as workers. So ``when_ready`` forks one
process, before the first worker, which loads the application as a worker would and
runs the async-mode supervisor in its main thread (its own signal handlers: TERM/INT
gracefully, QUIT at once, as ``manage.py steady_queue --mode async``).

The master's SIGCHLD handler reaps every child, this one too: waiting for it here
tolerates finding it reaped already.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from typing import Any, NoReturn

logger = logging.getLogger("steady_queue.processes")

# How often the queue process checks that the master is still its parent.
PARENT_CHECK_INTERVAL = 1.0
# Gunicorn halts when a child exits with 3 (worker boot error) or 4 (app load error).
FAILED = 1
# Signals of Gunicorn's master that mean nothing to the queue process.
IGNORED = ("SIGHUP", "SIGUSR1", "SIGUSR2", "SIGTTIN", "SIGTTOU", "SIGWINCH")


class QueueProcess:
    """The queue process forked from Gunicorn's master ``arbiter``."""

    def __init__(self, pid: int):
        self.pid = pid

    @classmethod
    def fork(cls, arbiter: Any) -> QueueProcess:
        """Fork the queue process; return at once in the master."""
        _close_connections()
        pid = os.fork()
        if pid == 0:
            _run_child(arbiter)
        arbiter.log.info("Started Steady Queue's embedded queue (pid %d)", pid)
        return cls(pid)

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def stop(self, timeout: float) -> bool:
        """TERM it; after ``timeout`` seconds, KILL it. Return whether it stopped in time."""
        self.signal(signal.SIGTERM)
        if self.wait(timeout):
            return True
        self.signal(signal.SIGKILL)
        self.wait(5.0)
        return False

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for it to exit (reaped here or by the master)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return True  # the master's SIGCHLD handler reaped it
            if pid:
                return True
            time.sleep(0.05)
        return False


def _close_connections() -> None:
    # With preload_app the master may hold database connections: a child using the
    # same sockets would talk over the master's sessions.
    from django.conf import settings

    if settings.configured:
        from django.db import connections

        for connection in connections.all(initialized_only=True):
            connection.close()


def _run_child(arbiter: Any) -> NoReturn:
    code = FAILED
    try:
        _leave_the_master(arbiter)
        arbiter.app.wsgi()  # load the application (and set Django up) as a worker would
        code = _supervise(master=arbiter.pid)
    except BaseException:
        logger.exception("Steady Queue's embedded queue crashed")
    finally:
        logging.shutdown()
        os._exit(code)  # never back into the master's code


def _leave_the_master(arbiter: Any) -> None:
    # The master's handlers write to its pipe; the supervisor installs its own shortly.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    for name in IGNORED:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    for listener in arbiter.LISTENERS:
        listener.close()  # the master's sockets: this process serves no request
    for fd in arbiter.PIPE:
        os.close(fd)


def _supervise(master: int) -> int:
    from .running import build_supervisor

    supervisor = build_supervisor()
    threading.Thread(target=_stop_without, args=(master, supervisor), daemon=True).start()
    supervisor.start()
    return 0


def _stop_without(master: int, supervisor) -> None:
    """Stop the queue once the master is gone (killed: it could not stop us)."""
    while os.getppid() == master:
        time.sleep(PARENT_CHECK_INTERVAL)
    logger.warning("Gunicorn's master (pid %d) is gone: stopping the embedded queue", master)
    supervisor.stop()
