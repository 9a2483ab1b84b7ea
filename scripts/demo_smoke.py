"""Start the demo as `make demo` does, check its pages answer, and stop it with TERM.

Usage: .venv/bin/python scripts/demo_smoke.py
Uses a throw-away SQLite database and a free port. Exits 1, saying what went wrong,
if the demo does not come up, a page answers unexpectedly, or it does not stop cleanly.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0

EXPECTED = [
    ("/", 200, None),
    ("/static/demo/site.css", 200, None),
    ("/jobs/", 302, "/admin/login/?next=/jobs/"),
]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def main() -> int:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        environment = {**os.environ, "DEMO_DATABASE": str(Path(tmp) / "demo.sqlite3")}
        demo = subprocess.Popen(
            [sys.executable, str(ROOT / "demo_site" / "run_demo.py"), "--port", str(port)],
            env=environment,
            stdin=subprocess.DEVNULL,
        )
        try:
            problems = check_pages(demo, port)
        finally:
            problems += stop(demo)
    for problem in problems:
        print(f"demo_smoke: {problem}", file=sys.stderr)
    if not problems:
        print("demo_smoke: the demo came up, answered as expected and stopped cleanly.")
    return 1 if problems else 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_pages(demo: subprocess.Popen, port: int) -> list[str]:
    deadline = time.monotonic() + START_TIMEOUT
    while not answers(port):
        if demo.poll() is not None:
            return [f"the demo exited with status {demo.returncode} before serving pages"]
        if time.monotonic() > deadline:
            return [f"the demo did not answer on port {port} within {START_TIMEOUT:.0f}s"]
        time.sleep(0.5)
    return [problem for path, *expected in EXPECTED if (problem := check(port, path, *expected))]


def answers(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def check(port: int, path: str, status: int, location: str | None) -> str | None:
    opener = urllib.request.build_opener(NoRedirect)
    try:
        response = opener.open(f"http://127.0.0.1:{port}{path}", timeout=30)
    except urllib.error.HTTPError as error:
        response = error
    got = (response.status, response.headers.get("Location"))
    if got != (status, location):
        return f"GET {path} answered {got}, expected {(status, location)}"
    return None


def stop(demo: subprocess.Popen) -> list[str]:
    if demo.poll() is not None:
        return [f"the demo had already exited with status {demo.returncode}"]
    demo.send_signal(signal.SIGTERM)
    try:
        code = demo.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        demo.kill()
        return [f"the demo did not stop within {STOP_TIMEOUT:.0f}s of TERM"]
    return [] if code == 0 else [f"the demo exited with status {code} after TERM"]


if __name__ == "__main__":
    sys.exit(main())
