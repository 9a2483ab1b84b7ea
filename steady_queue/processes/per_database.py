"""One ``manage.py steady_queue`` for several queue databases: a supervisor per database.

Each queue database has its own process rows, heartbeats and claims, which its own
supervisor keeps; the command forks one per database (``--backend`` given more than
once) and stands in front of them: it passes TERM, INT and QUIT on to all of them,
and when one exits it stops the others and exits too, so that the orchestrator that
started the command restarts the whole of it rather than leave a database unserved.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable
from typing import NoReturn

from django.db import connections

import steady_queue

from .base import HANDLED_SIGNALS

logger = logging.getLogger("steady_queue.processes")


def run_per_database(databases: list[str], run_supervisor: Callable[[], int]) -> int:
    """Run ``run_supervisor()`` in a child per database; return the first non-zero exit code."""
    for connection in connections.all(initialized_only=True):
        connection.close()  # each child opens its own
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)  # until the forwarding is set
    children = {_fork(database, run_supervisor): database for database in databases}
    forwarded: list[int] = []

    def forward(signum, frame) -> None:
        forwarded.append(signum)
        _signal_all(children, signum)

    for signum in HANDLED_SIGNALS:
        signal.signal(signum, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
    logger.info("Started a supervisor per queue database: %s", _names(children))
    code = 0
    while children:
        pid, status = os.wait()
        database = children.pop(pid, None)
        if database is None:
            continue
        exited = os.waitstatus_to_exitcode(status)
        code = code or (exited if exited > 0 else 1 if exited else 0)
        if children and not forwarded:
            logger.error(
                "The supervisor of queue database %r exited (%s): stopping the others",
                database,
                exited,
            )
            forwarded.append(signal.SIGTERM)
            _signal_all(children, signal.SIGTERM)
    return code


def _fork(database: str, run_supervisor: Callable[[], int]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        steady_queue.database = database
        # Each supervisor keeps its own pidfile and liveness file.
        for setting in ("supervisor_pidfile", "liveness_file"):
            if path := getattr(steady_queue, setting):
                setattr(steady_queue, setting, f"{path}.{database}")
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED_SIGNALS)
        code = run_supervisor()
    except BaseException:
        logger.exception("The supervisor of queue database %r crashed", database)
    finally:
        _exit(code)


def _exit(code: int) -> NoReturn:
    # Never back through the command's caller: this process is only the child.
    logging.shutdown()
    os._exit(code)


def _signal_all(children: dict[int, str], signum: int) -> None:
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _names(children: dict[int, str]) -> str:
    return ", ".join(f"{database} (pid {pid})" for pid, database in children.items())
