"""``manage.py steady_queue_health``: exit 0 when healthy, else 1 and one line per problem."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from steady_queue.models import Job, Pause, ReadyExecution, RecurringTask
from tests import tasks

from .conftest import health, register, stale_age

TWO_QUEUES = ["--config", "tests.observability.configs.TWO_QUEUES"]


def enqueue_waiting(queue: str, waited: timedelta) -> Job:
    """A ready job in ``queue`` that became ready ``waited`` ago."""
    result = tasks.noop.using(queue_name=queue).enqueue()
    ReadyExecution.objects.filter(job_id=result.id).update(created_at=timezone.now() - waited)
    return Job.objects.get(pk=result.id)


def test_healthy_queue_exits_zero_with_a_bounded_number_of_queries(
    healthy_processes, django_assert_max_num_queries
):
    enqueue_waiting("default", timedelta(seconds=5))
    # PostgreSQL reads pg_stat_activity too (long_transaction).
    horizon = 1 if connection.vendor == "postgresql" else 0
    with django_assert_max_num_queries(4 + horizon):
        result = health("--max-latency", "5m")
    assert (result.code, result.lines) == (0, ["OK"])


def test_no_process_at_all_names_each_missing_kind(db):
    result = health()
    assert result.code == 1
    assert result.problems() == ["no_supervisor", "no_worker", "no_dispatcher"]
    assert "No live worker takes jobs from queue '*'" in result.output


def test_a_configured_queue_without_a_live_worker_is_named(db):
    supervisor = register("Supervisor")
    register("Worker", queues=["real_time"], supervisor=supervisor)
    register("Dispatcher", supervisor=supervisor)
    result = health(*TWO_QUEUES)
    assert result.code == 1
    assert result.lines == ["no_worker: No live worker takes jobs from queue 'background'."]


def test_a_worker_polling_every_queue_serves_each_configured_one(healthy_processes):
    assert health(*TWO_QUEUES).code == 0


def test_queue_option_checks_only_that_queue(db):
    supervisor = register("Supervisor")
    register("Worker", queues=["real_time"], supervisor=supervisor)
    register("Dispatcher", supervisor=supervisor)
    assert health(*TWO_QUEUES, "--queue", "real_time").code == 0
    assert health(*TWO_QUEUES, "--queue", "low").problems() == ["no_worker"]


def test_a_missing_dispatcher_is_reported(db):
    supervisor = register("Supervisor")
    register("Worker", queues=["*"], supervisor=supervisor)
    result = health()
    assert (result.code, result.problems()) == (1, ["no_dispatcher"])
    # A configuration without dispatchers needs none.
    assert health("--config", "tests.observability.configs.WORKERS_ONLY").code == 0


def test_a_missing_supervisor_is_reported(db):
    register("Worker", queues=["*"])
    register("Dispatcher")
    result = health()
    assert (result.code, result.problems()) == (1, ["no_supervisor"])


def test_stale_heartbeats_are_reported_and_do_not_count_as_live(healthy_processes):
    stale = register("Worker", queues=["*"], age=stale_age())
    result = health()
    assert result.code == 1
    [line] = result.lines
    assert line.startswith(f"stale_heartbeat: Worker {stale.name} (pid {stale.pid} on box)")


def test_a_stale_process_is_not_a_live_one(db):
    supervisor = register("Supervisor")
    register("Dispatcher", supervisor=supervisor)
    register("Worker", queues=["*"], supervisor=supervisor, age=stale_age())
    assert health().problems() == ["no_worker", "stale_heartbeat"]


def test_latency_above_the_maximum_names_the_queue(healthy_processes):
    enqueue_waiting("background", timedelta(minutes=10))
    enqueue_waiting("default", timedelta(seconds=30))
    result = health("--max-latency", "5m")
    assert result.code == 1
    [line] = result.lines
    assert line.startswith("latency: Queue 'background': the next ready job has waited 60")
    assert line.endswith("(more than 300s).")
    assert health("--max-latency", "900").code == 0
    assert health("--max-latency", "5m", "--queue", "default").code == 0


def test_latency_of_a_paused_queue_is_not_a_problem(healthy_processes):
    enqueue_waiting("background", timedelta(hours=1))
    Pause.objects.create(queue_name="background")
    assert health("--max-latency", "1m").code == 0


def test_enabled_recurring_tasks_without_a_live_scheduler_are_reported(healthy_processes):
    RecurringTask.objects.create(key="nightly", task_path="tests.tasks.noop", schedule="@daily")
    result = health()
    assert (result.code, result.problems()) == (1, ["no_scheduler"])
    register("Scheduler", supervisor=healthy_processes[0])
    assert health().code == 0


def test_disabled_recurring_tasks_need_no_scheduler(healthy_processes):
    RecurringTask.objects.create(
        key="nightly", task_path="tests.tasks.noop", schedule="@daily", enabled=False
    )
    assert health().code == 0


def test_an_unreachable_database_is_the_only_problem_reported(unreachable_database):
    result = health("--max-latency", "1m")
    assert result.code == 1
    [line] = result.lines
    assert line.startswith("database_unreachable: The queue database ('unreachable') is")


def test_json_output_names_problems_and_their_subjects(db):
    supervisor = register("Supervisor")
    register("Worker", queues=["real_time"], supervisor=supervisor)
    register("Dispatcher", supervisor=supervisor)
    result = health(*TWO_QUEUES, "--json")
    assert result.code == 1
    body = json.loads(result.output)
    assert body["status"] == "failing"
    assert body["problems"] == [
        {
            "problem": "no_worker",
            "subject": "background",
            "message": "No live worker takes jobs from queue 'background'.",
        }
    ]


def test_json_output_when_healthy(healthy_processes):
    result = health("--json")
    assert (result.code, json.loads(result.output)) == (0, {"status": "ok", "problems": []})


def test_an_invalid_duration_is_a_usage_error(db):
    with pytest.raises(CommandError, match="'soon' is not a duration"):
        health("--max-latency", "soon")


def test_an_invalid_configuration_is_reported(db, settings):
    settings.STEADY_QUEUE = "workers please"
    result = health()
    assert (result.code, result.problems()) == (1, ["invalid_configuration"])


def test_an_unknown_queue_is_a_usage_error_not_a_healthy_queue(healthy_processes):
    with pytest.raises(CommandError, match="Unknown queue 'no-such-queue'") as raised:
        health("--queue", "no-such-queue")
    assert raised.value.returncode == 2


def test_a_queue_of_the_given_configuration_is_known(healthy_processes):
    assert health(*TWO_QUEUES, "--queue", "background").code == 0
