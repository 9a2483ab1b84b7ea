"""Start and stop the workers under test as real subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

MANAGE = str(Path(__file__).resolve().parent / "manage.py")


@contextmanager
def running(commands: list[list[str]], **environment: str):
    """Run each ``manage.py`` command line in its own process for the ``with`` block."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **environment}
    procs = [
        subprocess.Popen([sys.executable, MANAGE, *cmd], env=env, stdout=subprocess.DEVNULL)
        for cmd in commands
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def steady_queue(config: str) -> list[list[str]]:
    """``manage.py steady_queue`` with ``config`` as ``"<processes>x<threads>"``."""
    return [["steady_queue", "--skip-recurring", "--config", f"bench.configs.W{config}"]]


def dtdb(processes: int, interval: float) -> list[list[str]]:
    command = ["db_worker", "--backend", "dtdb", "--no-startup-delay", "--interval", str(interval)]
    return [[*command, "--worker-id", f"bench-{i}"] for i in range(processes)]


#: dj-queue's configurations: its defaults, and its throughput configuration (an overlay
#: file, and persistent connections in its processes, as its README recommends).
DJ_QUEUE_CONFIGS = {
    "default": ([], {}),
    "throughput": (
        ["--config", str(Path(__file__).resolve().parent / "dj_queue_throughput.toml")],
        {"SQ_BENCH_CONN_MAX_AGE": "60"},
    ),
}


@contextmanager
def dj_queue(config: str):
    """Run ``manage.py dj_queue`` for the "djq" backend with ``config`` (DJ_QUEUE_CONFIGS)."""
    options, environment = DJ_QUEUE_CONFIGS[config]
    command = ["dj_queue", "--backend", "djq", "--skip-recurring", *options]
    with running([command], **environment) as procs:
        yield procs
