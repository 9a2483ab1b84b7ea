"""A queue running in this process: a supervisor and its children, all threads.

``start()`` runs the supervisor of async mode (``processes.threads``) in a thread of
its own, beside whatever the process does (serving web requests). Nothing is forked and
no signal handler is installed: the web server owns the process's signals, and stops
the queue by calling ``stop()`` (the ASGI lifespan and the Gunicorn hooks do).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import TYPE_CHECKING

import steady_queue

from ..exceptions import EmbeddedQueueAlreadyRunning

if TYPE_CHECKING:
    from ..configuration import Options
    from ..processes.supervisor import Supervisor

logger = logging.getLogger("steady_queue.processes")

# steady_queue.embedded_processes -> what the supervisor leaves out.
PROCESSES = {
    "all": {},
    "workers_and_dispatchers": {"skip_recurring": True},
    "workers": {"only_workers": True},
}

_lock = threading.Lock()
_running: EmbeddedQueue | None = None


def build_supervisor(options: Options | None = None) -> Supervisor:
    """The async-mode supervisor of ``options`` (default: settings.STEADY_QUEUE), minus
    what ``steady_queue.embedded_processes`` leaves out."""
    from .. import configuration
    from ..processes.supervisor import Supervisor

    which = steady_queue.embedded_processes
    if which not in PROCESSES:
        choices = ", ".join(map(repr, PROCESSES))
        raise ValueError(f"steady_queue.embedded_processes is {which!r}: use one of {choices}")
    config = options if options is not None else configuration.load()
    return Supervisor.from_configuration(config, mode="async", **PROCESSES[which])


def start(options: Options | None = None) -> EmbeddedQueue:
    """Start a queue in this process, in threads; return its handle (``.stop()``).

    Raise ``EmbeddedQueueAlreadyRunning`` if this process runs one already.
    """
    global _running
    with _lock:
        if _running is not None and _running.running:
            raise EmbeddedQueueAlreadyRunning(
                f"A Steady Queue already runs in this process (pid {os.getpid()}): "
                "stop() it before starting another, or keep using it"
            )
        supervisor = build_supervisor(options)
        _running = EmbeddedQueue(supervisor)
        _running.start()
        return _running


class EmbeddedQueue:
    """The handle of a queue started by ``start()``."""

    def __init__(self, supervisor: Supervisor):
        self.supervisor = supervisor
        supervisor.in_thread = True
        self.pid = os.getpid()
        self._thread = threading.Thread(
            target=self._supervise, name=f"steady-queue-{supervisor.name}", daemon=True
        )

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<EmbeddedQueue {self.supervisor.name} {state}>"

    @property
    def running(self) -> bool:
        """Whether the supervisor's thread still runs (in this very process)."""
        return os.getpid() == self.pid and self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()
        # An interpreter that exits without stop() still stops the queue gracefully.
        atexit.register(self._stop_at_exit)
        logger.info("Started an embedded queue in pid %d", self.pid)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop gracefully, as TERM stops ``manage.py steady_queue``: running jobs get
        ``steady_queue.shutdown_timeout`` to finish, then go back to the queue.

        Wait up to ``timeout`` seconds (None: until stopped); return whether it stopped.
        """
        if os.getpid() != self.pid:
            return True  # a forked copy: its threads did not come along
        self.supervisor.stop()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def quit(self, timeout: float | None = None) -> bool:
        """Stop now, as QUIT does: running jobs go back to the queue at once."""
        self.supervisor.quit()
        return self.stop(timeout)

    def _supervise(self) -> None:
        try:
            self.supervisor.start()
        except BaseException:
            logger.exception("The embedded queue's supervisor crashed")

    def _stop_at_exit(self) -> None:
        if self.running:
            self.stop()


def _forget_after_fork() -> None:
    # A forked child has none of the parent's threads: it runs no queue, and may start one.
    global _running, _lock
    _running, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
