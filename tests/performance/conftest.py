from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.processes.conftest import MANAGE, REPO, Supervisor, _environment


@pytest.fixture
def start_supervisor(transactional_db, tmp_path: Path) -> Iterator[Callable[..., Supervisor]]:
    """Start ``manage.py steady_queue --config tests.performance.configs.<config>``."""
    started: list[Supervisor] = []

    def start(config: str, children: int) -> Supervisor:
        output = tmp_path / f"supervisor-{len(started)}.log"
        command = [sys.executable, str(MANAGE), "steady_queue", "--skip-checks", "-v", "2"]
        command += ["--config", f"tests.performance.configs.{config}", "--skip-recurring"]
        with output.open("w") as out:
            popen = subprocess.Popen(
                command,
                cwd=REPO,
                env=_environment(tmp_path / "hooks.log", {}),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        supervisor = Supervisor(popen, output)
        started.append(supervisor)
        supervisor.wait_until_ready(children)
        return supervisor

    yield start
    for supervisor in started:
        supervisor.kill_all()
        print(f"--- output of supervisor {supervisor.pid} ---\n{supervisor.output()}")
