"""Log records about a job carry its fields as ``extra``
(docs/reference/logging-and-monitoring.md), so a JSON formatter emits them; and a job
still logs one line as it starts and one as it ends, with the ``steady_queue`` loggers at
DEBUG."""

from __future__ import annotations

import io
import json
import logging

import pytest
from pythonjsonlogger.json import JsonFormatter

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db

FIELDS = {"job_id", "task_path", "queue_name", "attempt", "process_name"}


@pytest.fixture
def records():
    """Every record of the ``steady_queue`` loggers, at DEBUG."""
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    root = logging.getLogger("steady_queue")
    handler, level = Keep(logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield seen
    root.removeHandler(handler)
    root.setLevel(level)


def test_start_and_finish_records_carry_the_jobs_fields(records):
    result = tasks.add.using(queue_name="low").enqueue(1, 2)

    run_ready_jobs()

    started, finished = records
    for record in (started, finished):
        assert {name: getattr(record, name) for name in FIELDS} == {
            "job_id": result.id,
            "task_path": "tests.tasks.add",
            "queue_name": "low",
            "attempt": 1,
            "process_name": "in-process",
        }
    assert not hasattr(started, "duration_ms")
    assert finished.duration_ms >= 0 and finished.getMessage().startswith("Finished job")


def test_a_failure_carries_its_fields_and_duration(records):
    result = tasks.explode.enqueue("boom")

    run_ready_jobs()

    failed = records[-1]
    assert failed.levelno == logging.WARNING and failed.getMessage().startswith("Failed job")
    assert (failed.job_id, failed.task_path, failed.attempt) == (
        result.id,
        "tests.tasks.explode",
        1,
    )
    assert isinstance(failed.duration_ms, float)


def test_each_job_logs_one_line_as_it_starts_and_one_as_it_ends_at_debug(records):
    for i in range(3):
        tasks.add.enqueue(i, i)
    tasks.explode.enqueue("boom")

    run_ready_jobs()

    assert [record.getMessage().split(" ")[0] for record in records] == [
        "Started",
        "Finished",
    ] * 3 + ["Started", "Failed"]
    ids = [str(pk) for pk in Job.objects.order_by("pk").values_list("pk", flat=True)]
    assert [record.job_id for record in records[::2]] == ids


def test_a_json_formatter_emits_the_fields():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("{levelname}{name}{message}", style="{"))
    logger = logging.getLogger("steady_queue.jobs")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        result = tasks.add.enqueue(2, 3)
        run_ready_jobs()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)

    started, finished = (json.loads(line) for line in stream.getvalue().splitlines())
    assert started["job_id"] == finished["job_id"] == result.id
    assert finished["task_path"] == "tests.tasks.add" and finished["queue_name"] == "default"
    assert finished["attempt"] == 1 and finished["process_name"] == "in-process"
    assert finished["duration_ms"] >= 0 and finished["name"] == "steady_queue.jobs"


def test_signals_of_another_backend_log_nothing(records):
    from django.utils.module_loading import import_string

    from steady_queue.compat import task_finished, task_started
    from steady_queue.results import result_for
    from tests.acceptance.api import BACKPORT

    dummy = import_string(
        f"{'django_tasks' if BACKPORT else 'django.tasks'}.backends.dummy.DummyBackend"
    )
    tasks.add.enqueue(1, 2)
    run_ready_jobs()
    records.clear()
    result = result_for(Job.objects.with_execution().get())

    task_started.send(dummy, task_result=result)
    task_finished.send(dummy, task_result=result)

    assert records == []
