"""The supervisor's pidfile: a second supervisor is refused, a stale pidfile replaced."""

from __future__ import annotations

import signal

import pytest

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_pidfile_refuses_a_second_supervisor_and_replaces_a_stale_one(start_supervisor, tmp_path):
    pidfile = tmp_path / "run" / "supervisor.pid"
    first = start_supervisor("WORKER", children=1, SQ_SUPERVISOR_PIDFILE=str(pidfile))
    assert pidfile.read_text().strip() == str(first.pid)

    second = start_supervisor("WORKER", SQ_SUPERVISOR_PIDFILE=str(pidfile))
    assert second.wait() != 0
    assert f"already running (pid {first.pid})" in second.output()

    first.kill_all()  # killed outright: it leaves its pidfile behind
    assert pidfile.exists()
    third = start_supervisor("WORKER", children=1, SQ_SUPERVISOR_PIDFILE=str(pidfile))
    assert pidfile.read_text().strip() == str(third.pid)

    third.send(signal.SIGTERM)
    assert third.wait() == 0
    assert not pidfile.exists()
