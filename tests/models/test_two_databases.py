"""The queue tables in a second database, through steady_queue.routers.SteadyQueueRouter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_steady_queue_runs_with_its_tables_in_a_second_sqlite_database(tmp_path):
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.scenarios.settings_two_dbs",
        "SQ_TWO_DBS_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "tests.scenarios.two_databases"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("two databases: ok")
