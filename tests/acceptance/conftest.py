"""Fixtures of the acceptance suite: black-box checks of what README.md, docs/ and DESIGN.md
promise."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from steady_queue.task_options import recurring_task
from tests.acceptance.api import task_enqueued, task_finished, task_started
from tests.tasks import acceptance as tasks


@pytest.fixture(autouse=True)
def _reset_seen() -> Iterator[None]:
    tasks.SEEN.clear()
    yield
    tasks.SEEN.clear()


@pytest.fixture
def no_recurring(monkeypatch) -> list:
    """Start with no @recurring declarations, so that a test's own are the only ones."""
    monkeypatch.setattr(recurring_task, "_declared", [])
    return recurring_task._declared


class SignalLog:
    def __init__(self) -> None:
        self.events: list[tuple[str, object, object]] = []

    def receiver(self, name: str):
        def receive(sender, task_result, **kwargs):
            import sys

            self.events.append((name, sender, task_result, sys.exc_info()[1]))

        return receive

    def of(self, name: str) -> list:
        return [event for event in self.events if event[0] == name]


@pytest.fixture
def signals() -> Iterator[SignalLog]:
    log = SignalLog()
    receivers = {
        "enqueued": log.receiver("enqueued"),
        "started": log.receiver("started"),
        "finished": log.receiver("finished"),
    }
    task_enqueued.connect(receivers["enqueued"], weak=False)
    task_started.connect(receivers["started"], weak=False)
    task_finished.connect(receivers["finished"], weak=False)
    yield log
    task_enqueued.disconnect(receivers["enqueued"])
    task_started.disconnect(receivers["started"])
    task_finished.disconnect(receivers["finished"])


# The process tests' helpers: a running ``manage.py steady_queue`` and its output.
from tests.processes.conftest import MANAGE, REPO, Supervisor, _environment  # noqa: E402


@pytest.fixture
def steady_queue_command(transactional_db, tmp_path):
    """Start ``python tests/manage.py steady_queue <args>`` as a user would, in its own session.

    ``settings`` picks the settings module (the test database is passed through the
    environment); teardown kills the whole process group whatever the test did.
    """
    import subprocess
    import sys

    started: list[Supervisor] = []

    def start(*args: str, settings: str = "tests.acceptance.process_settings", **env: str):
        output = tmp_path / f"supervisor-{len(started)}.log"
        environment = _environment(tmp_path / "hooks.log", env)
        environment["DJANGO_SETTINGS_MODULE"] = settings
        with output.open("w") as out:
            popen = subprocess.Popen(
                [sys.executable, str(MANAGE), "steady_queue", *args],
                cwd=REPO,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(Supervisor(popen, output))
        return started[-1]

    yield start
    for supervisor in started:
        supervisor.kill_all()
        print(f"--- output of supervisor {supervisor.pid} ---\n{supervisor.output()}")
