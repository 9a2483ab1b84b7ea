"""Settings of the ``manage.py steady_queue`` subprocesses started by the process tests.

The tests pass the test database's name and short timings through the environment.
"""

import os
from datetime import timedelta

import steady_queue
from steady_queue import hooks
from tests.settings import *  # noqa: F403
from tests.settings import DATABASES

DATABASES["default"]["NAME"] = os.environ["SQ_PROCESS_DB_NAME"]
if "SQ_PROCESS_BILLING_DB_NAME" in os.environ:
    DATABASES["billing"]["NAME"] = os.environ["SQ_PROCESS_BILLING_DB_NAME"]
else:  # started by a test that names no second queue database
    del DATABASES["billing"]
    TASKS = {alias: config for alias, config in TASKS.items() if alias != "billing"}  # noqa: F405


def _seconds(variable: str, default: float) -> timedelta:
    return timedelta(seconds=float(os.environ.get(variable, default)))


steady_queue.process_heartbeat_interval = _seconds("SQ_HEARTBEAT_INTERVAL", 0.5)
steady_queue.process_alive_threshold = _seconds("SQ_ALIVE_THRESHOLD", 60)
steady_queue.shutdown_timeout = _seconds("SQ_SHUTDOWN_TIMEOUT", 5)
steady_queue.metrics_flush_interval = _seconds("SQ_METRICS_FLUSH_INTERVAL", 0.5)
steady_queue.timeout_grace = _seconds("SQ_TIMEOUT_GRACE", 10)
steady_queue.cancel_grace = _seconds("SQ_CANCEL_GRACE", 30)
steady_queue.supervisor_pidfile = os.environ.get("SQ_SUPERVISOR_PIDFILE") or None


def _record_hook(event: str):
    def hook(process) -> None:
        with open(os.environ["SQ_HOOKS_LOG"], "a") as log:
            log.write(f"{process.kind} {event} {os.getpid()}\n")

    return hook


if os.environ.get("SQ_HOOKS_LOG"):
    for _event in ("start", "stop"):
        for _kind in ("", "worker_", "dispatcher_", "scheduler_"):
            getattr(hooks, f"on_{_kind}{_event}")(_record_hook(_event))


def _log_statements(path: str):
    """Append ``<pid> <statement>`` to ``path`` for each statement this process sends."""
    from django.db.backends.signals import connection_created

    def log(execute, sql, params, many, context):
        with open(path, "a") as file:  # one short append: lines of processes do not mix
            file.write(f"{os.getpid()} {' '.join(str(sql).split())[:1000]}\n")
        return execute(sql, params, many, context)

    def wrap(sender, connection, **kwargs) -> None:
        if log not in connection.execute_wrappers:
            connection.execute_wrappers.append(log)

    connection_created.connect(wrap, weak=False)


if os.environ.get("SQ_STATEMENT_LOG"):
    _log_statements(os.environ["SQ_STATEMENT_LOG"])
