"""A private PgBouncer in transaction pooling mode, in front of the test PostgreSQL.

Debian's ``pgbouncer`` package (``scripts/install-system-deps`` installs it). Started in
the foreground on a free port and stopped with the fixture, so that it holds no server
connection when the test database is dropped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
from django.db import connection

CONFIG = """\
[databases]
* = host={host} port={port}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen_port}
auth_type = trust
auth_file = {directory}/users.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = {pool_size}
ignore_startup_parameters = extra_float_digits,options
unix_socket_dir =
logfile = {directory}/pgbouncer.log
"""


def binary() -> str:
    found = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(found).exists():
        raise RuntimeError("pgbouncer is not installed: run scripts/install-system-deps")
    return found


@contextlib.contextmanager
def running(pool_size: int = 20) -> Iterator[int]:
    """Run PgBouncer in front of the test database's server; yield its port.

    ``pool_size``: the server connections it opens at most (per database and user).
    """
    settings = connection.settings_dict
    directory = Path(tempfile.mkdtemp(prefix="sq-pgbouncer-"))
    port = _free_port()
    (directory / "pgbouncer.ini").write_text(
        CONFIG.format(
            host=settings["HOST"],
            port=settings["PORT"],
            listen_port=port,
            directory=directory,
            pool_size=pool_size,
        )
    )
    (directory / "users.txt").write_text(f'"{settings["USER"]}" ""\n')
    command = [binary(), str(directory / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        shutil.chown(directory, "postgres")
        for path in directory.iterdir():
            shutil.chown(path, "postgres")
        command[1:1] = ["-u", "postgres"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        _wait_for(port, settings, directory)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, settings: dict, directory: Path, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(
                host="127.0.0.1", port=port, user=settings["USER"], dbname=settings["NAME"]
            ).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                log = directory / "pgbouncer.log"
                raise RuntimeError(
                    f"PgBouncer did not start: {log.read_text() if log.exists() else ''}"
                ) from None
            time.sleep(0.05)
