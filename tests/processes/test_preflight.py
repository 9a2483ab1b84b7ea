"""``manage.py steady_queue`` refuses to start where it could only idle: no Steady Queue
backend in TASKS, or a queue database whose migrations were not run (issue 25, 16-17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steady_queue.models import Process
from tests.empty_database import empty_database
from tests.processes.conftest import wait_until

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_without_a_steady_queue_backend_in_tasks_the_command_exits_2_naming_the_setting(
    start_supervisor,
):
    supervisor = start_supervisor(DJANGO_SETTINGS_MODULE="tests.processes.no_tasks_settings")

    assert supervisor.wait() == 2, supervisor.output()
    output = supervisor.output()
    assert "TASKS" in output
    assert "steady_queue.backend.SteadyQueueBackend" in output
    assert not Process.objects.exists()


def test_on_a_database_without_the_tables_the_command_exits_2_saying_to_migrate(
    start_supervisor, tmp_path: Path
):
    with empty_database(tmp_path) as name:
        supervisor = start_supervisor(SQ_PROCESS_DB_NAME=name)

        assert supervisor.wait() == 2, supervisor.output()
    output = supervisor.output()
    assert "run manage.py migrate" in output
    assert "steady_queue_jobs" in output
    assert "retrying" not in output.lower()


def test_the_scheduler_names_the_recurring_tasks_it_loaded(start_supervisor):
    # Item 15: a task of an app missing from INSTALLED_APPS would be missing here.
    supervisor = start_supervisor(
        "FAST", recurring=True, DJANGO_SETTINGS_MODULE="tests.processes.recurring_settings"
    )

    wait_until(
        lambda: "Loaded 1 recurring task: every second" in supervisor.output(),
        what="the scheduler's start line",
    )
