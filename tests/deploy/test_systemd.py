"""deploy/systemd: the unit and its drop-in start real commands and stop gracefully."""

from __future__ import annotations

import shlex

import pytest
from django.core.management import CommandError

import steady_queue

from .files import DEPLOY, check_manage_command, seconds, unit

SYSTEMD = DEPLOY / "systemd"
SERVICE = SYSTEMD / "steady-queue.service"
DROP_IN = SYSTEMD / "steady-queue-workers.conf"


def exec_start(path) -> list[str]:
    """The command line systemd runs: the last ExecStart= (an empty one resets the list)."""
    values = unit(path)["Service"]["ExecStart"]
    assert values[-1], f"{path.name}: the last ExecStart= is empty"
    return shlex.split(values[-1])


def test_every_file_of_deploy_systemd_is_checked_here():
    assert sorted(p.name for p in SYSTEMD.iterdir()) == sorted([SERVICE.name, DROP_IN.name])


def test_the_unit_has_its_sections_and_runs_the_supervisor():
    sections = unit(SERVICE)
    assert set(sections) == {"Unit", "Service", "Install"}
    argv = exec_start(SERVICE)
    assert argv[0].endswith("/python") and argv[1] == "manage.py"
    assert check_manage_command(argv) == "steady_queue"
    assert sections["Service"]["WorkingDirectory"] and sections["Install"]["WantedBy"]


def test_the_unit_stops_the_supervisor_alone_and_waits_longer_than_its_shutdown():
    service = unit(SERVICE)["Service"]
    # mixed: TERM to the main process only, so the supervisor stops its children itself.
    assert service["KillMode"] == ["mixed"] and service["KillSignal"] == ["SIGTERM"]
    (timeout,) = service["TimeoutStopSec"]
    assert seconds(timeout) > steady_queue.shutdown_timeout
    assert service["Restart"] == ["always"]


def test_the_drop_in_resets_exec_start_and_runs_only_workers():
    service = unit(DROP_IN)["Service"]
    assert service["ExecStart"][0] == "", "without an empty ExecStart= systemd refuses a second"
    argv = exec_start(DROP_IN)
    assert check_manage_command(argv) == "steady_queue" and "--only-workers" in argv
    # The drop-in changes the command only: the same interpreter and manage.py as the unit.
    assert argv[:3] == exec_start(SERVICE)[:3]


def test_the_command_check_refuses_an_option_the_command_lacks():
    with pytest.raises(CommandError, match="unrecognized arguments: --only-wrokers"):
        check_manage_command(["python", "manage.py", "steady_queue", "--only-wrokers"])
    with pytest.raises(AssertionError, match="no command 'steady_queues'"):
        check_manage_command(["python", "manage.py", "steady_queues"])
