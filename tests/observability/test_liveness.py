"""The liveness file: touched by a real supervisor's loop, checked without the database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import steady_queue
from tests.processes.conftest import MANAGE, REPO, wait_until

from .conftest import health

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def age(path) -> float:
    return time.time() - path.stat().st_mtime


def test_a_running_supervisor_keeps_the_file_fresh_and_a_stopped_one_fails_the_check(
    start_supervisor, tmp_path
):
    alive = tmp_path / "alive"
    supervisor = start_supervisor("WORKER", "--liveness-file", str(alive), children=1)
    wait_until(alive.exists, what="the liveness file")
    # The supervisor's loop turns about once a second: the file is touched again.
    wait_until(lambda: age(alive) < 0.5, timeout=5, what="a fresh touch")
    assert health("--liveness", str(alive), "--max-age", "5").code == 0

    supervisor.send(signal.SIGSTOP)  # stuck: its loop no longer turns
    try:
        stuck = wait_until(
            lambda: (r := health("--liveness", str(alive), "--max-age", "2")).code and r,
            timeout=10,
            what="the check to fail",
        )
        assert stuck.problems() == ["liveness_stale"]
    finally:
        supervisor.send(signal.SIGCONT)
    wait_until(lambda: health("--liveness", str(alive), "--max-age", "2").code == 0, timeout=10)

    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
    assert not alive.exists()
    assert health("--liveness", str(alive)).problems() == ["liveness_missing"]


def test_the_liveness_setting_is_the_default_file(tmp_path, monkeypatch):
    alive = tmp_path / "alive"
    monkeypatch.setattr(steady_queue, "liveness_file", str(alive))
    assert health("--liveness").problems() == ["liveness_missing"]
    alive.touch()
    assert health("--liveness").code == 0
    old = time.time() - 120
    os.utime(alive, (old, old))
    result = health("--liveness", "--max-age", "1m")
    assert result.problems() == ["liveness_stale"]
    assert "last touched 120s ago (more than 60s)" in result.output


def test_the_real_command_exits_1_with_the_problem_and_needs_no_database(tmp_path):
    missing = tmp_path / "nothing-here"
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "SQ_TEST_DB": "sqlite"}
    environment["SQ_SQLITE_DIR"] = str(tmp_path / "no-such-directory")
    finished = subprocess.run(
        [sys.executable, str(MANAGE), "steady_queue_health", "--liveness", str(missing)],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 1, finished.stderr
    assert finished.stdout == f"liveness_missing: The liveness file {missing} does not exist.\n"
