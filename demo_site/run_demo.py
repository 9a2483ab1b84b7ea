#!/usr/bin/env python
"""Set up the demo site, then run its web server and Steady Queue's supervisor together.

Steps: migrate the SQLite database, create the staff login, seed demo jobs, start
``manage.py runserver`` and ``manage.py steady_queue --reload`` (an edit to a Python
file of the demo restarts the workers, after they finish or release their jobs). Ctrl-C
or TERM stops both: the supervisor gets TERM, so it finishes its running jobs before it
exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANAGE = [sys.executable, str(HERE / "manage.py")]
USERNAME = "admin"
PASSWORD = "admin"
STOP_TIMEOUT = 30.0
# How many ports after a busy one to look at for a free one to suggest.
PORTS_TRIED = 20


class Stop(Exception):
    """Raised by the signal handler to leave the wait loop."""


def main(argv: list[str] | None = None) -> int:
    options = parse_arguments(argv)
    ensure_port_free(options.host, options.port)
    prepare()
    processes: dict[str, subprocess.Popen] = {}
    signal.signal(signal.SIGTERM, raise_stop)
    signal.signal(signal.SIGINT, raise_stop)
    try:
        processes["web server"] = start("runserver", "--noreload", f"{options.host}:{options.port}")
        processes["supervisor"] = start("steady_queue", "--reload")
        announce(options.host, options.port, processes)
        return wait_for_first_exit(processes)
    except Stop:
        print("\nStopping the supervisor and the web server...", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_all(processes)


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    return parser.parse_args(argv)


def ensure_port_free(host: str, port: int) -> None:
    """Exit, naming a free port to use instead, when ``port`` is taken."""
    if port_free(host, port):
        return
    spare = next((p for p in range(port + 1, port + PORTS_TRIED) if port_free(host, p)), port + 1)
    sys.exit(
        f"run_demo: port {port} is in use: make demo PORT={spare} (or run_demo.py --port {spare})"
    )


def port_free(host: str, port: int) -> bool:
    """Whether the web server could listen on ``port``: nothing answers, and it binds."""
    if accepts_connections(host, port):
        return False
    with socket.socket() as probe:
        # As the web server does, so that a connection closing on the port is no bar.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def prepare() -> None:
    manage("migrate", "--noinput", "--verbosity", "0")
    manage("demo_admin", "--username", USERNAME, "--password", PASSWORD)
    manage("seed_demo")


def manage(*arguments: str) -> None:
    subprocess.run([*MANAGE, *arguments], check=True)


def start(*arguments: str) -> subprocess.Popen:
    # A session of its own: Ctrl-C reaches only this launcher, which stops the
    # children in order instead of all of them at once.
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([*MANAGE, *arguments], env=environment, start_new_session=True)


def raise_stop(signum, frame) -> None:
    raise Stop


def announce(host: str, port: int, processes: dict[str, subprocess.Popen]) -> None:
    deadline = time.monotonic() + 30
    while not accepts_connections(host, port):
        if time.monotonic() > deadline or processes["web server"].poll() is not None:
            raise SystemExit("run_demo: the web server did not start.")
        time.sleep(0.2)
    print(
        f"\nSteady Queue demo is running.\n"
        f"  Home:      http://{host}:{port}/\n"
        f"  Dashboard: http://{host}:{port}/jobs/\n"
        f"  Login:     username {USERNAME!r}, password {PASSWORD!r}\n"
        f"Press Ctrl-C to stop.\n",
        flush=True,
    )


def accepts_connections(host: str, port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((host, port)) == 0


def wait_for_first_exit(processes: dict[str, subprocess.Popen]) -> int:
    while True:
        for name, process in processes.items():
            code = process.poll()
            if code is not None:
                print(f"run_demo: the {name} exited with status {code}.", file=sys.stderr)
                return code or 1
        time.sleep(0.5)


def stop_all(processes: dict[str, subprocess.Popen]) -> None:
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes.values():
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


if __name__ == "__main__":
    sys.exit(main())
