"""docs/reference/logging-and-monitoring.md ("Logging") and hooks-and-signals.md ("Lifecycle
hooks"): the registration side; process tests run them."""

from __future__ import annotations

import logging

import pytest

from steady_queue import hooks
from steady_queue.testing import run_ready_jobs
from tests.tasks.acceptance import fail, flaky, record

pytestmark = pytest.mark.django_db


def job_records(caplog, result_id: str) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name.startswith("steady_queue") and result_id in r.getMessage()
    ]


def test_one_line_per_job_start_and_finish(caplog):
    caplog.set_level(logging.DEBUG, logger="steady_queue")
    result = record.enqueue("x")
    run_ready_jobs()
    lines = job_records(caplog, result.id)
    assert [r.name for r in lines] == ["steady_queue.jobs", "steady_queue.jobs"]
    assert [r.levelno for r in lines] == [logging.INFO, logging.INFO]
    started, finished = (r.getMessage() for r in lines)
    assert "attempt 1" in started and "worker" in started
    assert record.module_path in finished
    assert any(char.isdigit() for char in finished)  # with the duration


def test_failure_is_a_warning_with_the_exception_class(caplog):
    caplog.set_level(logging.INFO, logger="steady_queue")
    result = fail.enqueue("x")
    run_ready_jobs()
    [failure] = [r for r in job_records(caplog, result.id) if r.levelno == logging.WARNING]
    assert failure.name == "steady_queue.jobs"
    assert "ValueError" in failure.getMessage()


def test_failed_attempt_that_will_be_retried_is_a_warning(caplog):
    caplog.set_level(logging.INFO, logger="steady_queue")
    result = flaky.enqueue(1)
    run_ready_jobs(max_jobs=1)
    warnings = [r for r in job_records(caplog, result.id) if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "ConnectionError" in warnings[0].getMessage()


@pytest.mark.parametrize(
    "name",
    [
        "on_start",
        "on_stop",
        "on_worker_start",
        "on_worker_stop",
        "on_dispatcher_start",
        "on_dispatcher_stop",
        "on_scheduler_start",
        "on_scheduler_stop",
    ],
)
def test_hook_decorators_exist_and_return_the_function(name, monkeypatch):
    monkeypatch.setattr(hooks, "_hooks", {})  # leave no hook behind

    def my_hook(process):
        return None

    assert getattr(hooks, name)(my_hook) is my_hook
