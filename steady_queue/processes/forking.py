"""Fork a supervised process safely: no shared connections, no way back into the parent."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import NoReturn

from django.db import connections

from .base import HANDLED_SIGNALS
from .interruptible import Interruptible
from .poller import Poller

logger = logging.getLogger("steady_queue.processes")


def fork_process(process: Poller, parent: Interruptible) -> int:
    """Start ``process`` in a forked child; return the child's pid."""
    _prepare_for_fork()
    # Signals wait until the child has installed its own handlers.
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
        raise
    if pid == 0:
        _run_child(process, parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
    return pid


def _prepare_for_fork() -> None:
    # A child sharing our sockets would talk over our sessions, and closing them in the
    # child would end ours: close them here, and each side reconnects on its own.
    for connection in connections.all(initialized_only=True):
        connection.close()
        if connection.alias in getattr(connection, "_connection_pools", {}):
            connection.close_pool()  # psycopg's pool runs threads
    if threading.active_count() > 1:
        logger.warning("Forking with threads running: %s", threading.enumerate())


def _run_child(process: Poller, parent: Interruptible) -> NoReturn:
    # The child leaves only through os._exit: never through the parent's shutdown,
    # finally blocks or atexit handlers, which would remove the parent's own row.
    code = 1
    try:
        parent.close_wakeup_pipe()
        code = process.start()
    except BaseException:
        logger.exception("%s crashed", process)
    finally:
        _flush_output()
        os._exit(code)


def _flush_output() -> None:
    for handler in logging.getLogger().handlers + logging.getLogger("steady_queue").handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
