"""``make demo`` on a busy port says which to use instead (issue 25, item 18)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

RUN_DEMO = Path(__file__).resolve().parent.parent / "demo_site" / "run_demo.py"


def test_a_busy_port_is_refused_naming_a_free_one_to_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]

        ran = subprocess.run(
            [sys.executable, str(RUN_DEMO), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert ran.returncode != 0
    suggested = ran.stderr.split("make demo PORT=")[1].split()[0]
    assert f"port {port} is in use: make demo PORT={suggested}" in ran.stderr
    assert int(suggested) != port
