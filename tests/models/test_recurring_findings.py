"""A scheduler names the recurring tasks it loaded, and warns for those it cannot find
in the code: an app left out of INSTALLED_APPS must not go unnoticed (issue 25, 15)."""

from __future__ import annotations

import logging

import pytest

from steady_queue.models import RecurringTask
from steady_queue.processes.recurring_schedule import RecurringSchedule
from steady_queue.task_options.recurring_task import recurring
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db

LOGGER = "steady_queue.scheduler"


def messages(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


def test_the_scheduler_logs_how_many_tasks_it_loaded_and_their_keys(declared, caplog):
    recurring(schedule="@daily", key="nightly")(tasks.tick)
    recurring(schedule="@hourly", key="hourly")(tasks.tick)

    with caplog.at_level(logging.INFO, logger=LOGGER):
        RecurringSchedule().boot()

    assert "Loaded 2 recurring tasks: hourly, nightly" in messages(caplog, logging.INFO)


def test_with_none_declared_the_start_line_says_where_they_are_looked_for(declared, caplog):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        RecurringSchedule().boot()

    [line] = [m for m in messages(caplog, logging.INFO) if m.startswith("Loaded")]
    assert "Loaded 0 recurring tasks" in line
    assert "INSTALLED_APPS" in line


def test_a_stored_task_of_a_module_in_no_installed_app_is_named_with_the_cause(declared, caplog):
    # Stored by an earlier deploy whose app is no longer (or was never) in INSTALLED_APPS.
    RecurringTask.objects.create(key="report", schedule="@daily", task_path="json.dumps")

    RecurringSchedule().boot()

    [warning] = messages(caplog, logging.WARNING)
    assert "'report'" in warning
    assert "json.dumps" in warning
    assert "no app in INSTALLED_APPS" in warning


def test_a_stored_task_whose_module_cannot_be_imported_is_named_with_the_cause(declared, caplog):
    RecurringTask.objects.create(key="gone", schedule="@daily", task_path="nowhere.tasks.job")
    RecurringTask.objects.create(
        key="added", schedule="@daily", task_path="nowhere.tasks.other", static=False
    )

    RecurringSchedule().boot()

    gone, added = sorted(messages(caplog, logging.WARNING), key=lambda m: "'added'" in m)
    assert "'gone' (task nowhere.tasks.job)" in gone and "cannot be imported" in gone
    assert "'added' cannot run" in added and "INSTALLED_APPS" in added


def test_tasks_declared_in_the_code_raise_no_warning(declared, caplog):
    recurring(schedule="@daily", key="nightly")(tasks.tick)
    RecurringSchedule().boot()
    caplog.clear()

    RecurringSchedule().boot()

    assert messages(caplog, logging.WARNING) == []
