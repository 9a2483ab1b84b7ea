"""The health command against a real ``manage.py steady_queue``: healthy, then killed."""

from __future__ import annotations

from datetime import timedelta

import pytest

import steady_queue
from tests.processes.conftest import wait_until

from .conftest import health

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

FAST = ("--config", "tests.processes.configs.FAST")
ALIVE_THRESHOLD = 5


def test_a_running_supervisor_is_healthy_and_a_killed_one_is_reported(
    start_supervisor, monkeypatch
):
    monkeypatch.setattr(steady_queue, "process_alive_threshold", timedelta(seconds=ALIVE_THRESHOLD))
    supervisor = start_supervisor("FAST", children=2, SQ_ALIVE_THRESHOLD=str(ALIVE_THRESHOLD))
    result = health(*FAST)
    assert (result.code, result.lines) == (0, ["OK"]), result.output

    supervisor.kill_all()  # SIGKILL: nobody deregisters, the rows stay behind
    # Each row goes stale on its own clock: wait for all three.
    stopped = wait_until(
        lambda: (r := health(*FAST)).problems().count("stale_heartbeat") == 3 and r,
        timeout=ALIVE_THRESHOLD + 15,
        what="the dead processes to be reported",
    )
    assert (
        stopped.problems()
        == ["no_supervisor", "no_worker", "no_dispatcher"] + ["stale_heartbeat"] * 3
    )
    assert f"Supervisor {supervisor.row().name} (pid {supervisor.pid}" in stopped.output
