"""A PostgreSQL server of the fault suite's own, on another port, so that restarting it
mid-run disturbs nobody else's tests.

    python -m tests.faults.private_postgres COMMAND...

initdb's a cluster in a temporary directory, starts it on 127.0.0.1:$SQ_FAULTS_PG_PORT
(default 5499), runs COMMAND with SQ_PG_HOST/SQ_PG_PORT pointing at it and
SQ_FAULTS_PG_DATA naming its data directory (``restart()`` needs it), then stops the
server and deletes the directory. Run as root, the server runs as the ``postgres`` user
(PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DATA_VARIABLE = "SQ_FAULTS_PG_DATA"


def _binary(name: str) -> str:
    """``name`` from PATH, else from Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"{name} not found: the fault suite needs the PostgreSQL server")
    return found if isinstance(found, str) else found[-1]


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _pg_ctl(data: str, *args: str) -> None:
    log = str(Path(data).parent / "server.log")
    command = [_binary("pg_ctl"), "-D", data, "-l", log, "-w", "-t", "60", *args]
    subprocess.run(_as_server_user(command), check=True, stdout=subprocess.DEVNULL)


def restart() -> None:
    """Restart the private server (fast shutdown: every open connection is cut)."""
    data = os.environ.get(DATA_VARIABLE)
    if not data:
        raise RuntimeError(
            f"{DATA_VARIABLE} is not set: run the fault suite on PostgreSQL through "
            "`make test-faults DB=postgres` (python -m tests.faults.private_postgres ...)."
        )
    _pg_ctl(data, "restart", "-m", "fast")


def main(command: list[str]) -> int:
    port = os.environ.get("SQ_FAULTS_PG_PORT", "5499")
    root = Path(tempfile.mkdtemp(prefix="sq-faults-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    try:
        initdb = [
            _binary("initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
        ]
        subprocess.run(_as_server_user(initdb), check=True, stdout=subprocess.DEVNULL)
        options = f"-c port={port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off"
        _pg_ctl(str(data), "start", "-o", options)
        try:
            env = {**os.environ, "SQ_PG_HOST": "127.0.0.1", "SQ_PG_PORT": port}
            env[DATA_VARIABLE] = str(data)
            return subprocess.run(command, env=env).returncode
        finally:
            _pg_ctl(str(data), "stop", "-m", "immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
