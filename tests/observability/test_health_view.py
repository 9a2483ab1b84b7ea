"""``health_view``: 200 or 503 and a small JSON body naming problems, for load balancers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from steady_queue.models import ReadyExecution
from tests import tasks

from .conftest import register

pytestmark = pytest.mark.urls("tests.observability.urls")
URL = "/queue/health"


def test_healthy_answers_200_without_login_in_a_few_queries(
    healthy_processes, django_assert_max_num_queries
):
    # PostgreSQL reads pg_stat_activity too (long_transaction).
    with django_assert_max_num_queries(5 if connection.vendor == "postgresql" else 4):
        response = Client().get(URL, {"max_latency": "5m"})
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "problems": []}
    assert "no-cache" in response["Cache-Control"]


def test_problems_answer_503_with_names_and_subjects_only(db):
    register("Worker", queues=["real_time"], age=timedelta(hours=1))
    result = tasks.noop.using(queue_name="background").enqueue("secret argument")
    ReadyExecution.objects.filter(job_id=result.id).update(
        created_at=timezone.now() - timedelta(hours=1)
    )
    response = Client().get(URL, {"max_latency": "60"})
    assert response.status_code == 503
    assert response.json() == {
        "status": "failing",
        "problems": [
            {"problem": "no_supervisor", "subject": ""},
            {"problem": "no_worker", "subject": "*"},
            {"problem": "no_dispatcher", "subject": ""},
            {"problem": "stale_heartbeat", "subject": "Worker"},
            {"problem": "latency", "subject": "background"},
        ],
    }
    # No job data, host or process name leaks to an anonymous caller.
    assert b"secret" not in response.content
    assert b"box" not in response.content


def test_queue_parameter_limits_the_checks(db):
    supervisor = register("Supervisor")
    register("Worker", queues=["real_time"], supervisor=supervisor)
    register("Dispatcher", supervisor=supervisor)
    assert Client().get(URL, {"queue": "real_time"}).status_code == 200
    response = Client().get(URL, {"queue": "background"})
    assert response.status_code == 503
    assert response.json()["problems"] == [{"problem": "no_worker", "subject": "background"}]


def test_an_unreachable_database_answers_503(unreachable_database):
    response = Client().get(URL)
    assert response.status_code == 503
    assert response.json()["problems"] == [{"problem": "database_unreachable", "subject": ""}]


def test_a_bad_max_latency_answers_400_and_says_why(db):
    response = Client().get(URL, {"max_latency": "soon"})
    assert response.status_code == 400
    assert "'soon' is not a duration" in response.json()["error"]


def test_head_is_answered_and_post_refused(healthy_processes):
    assert Client().head(URL).status_code == 200
    assert Client().post(URL).status_code == 405


def test_an_unknown_queue_is_refused_not_reported_healthy(healthy_processes):
    response = Client().get(URL, {"queue": "no-such-queue"})
    assert response.status_code == 400
    assert response.json() == {"status": "error", "error": "Unknown queue 'no-such-queue'."}


def test_a_queue_known_only_by_its_jobs_is_checked(healthy_processes):
    tasks.noop.using(backend="secondary", queue_name="made_up_by_a_job").enqueue()
    assert Client().get(URL, {"queue": "made_up_by_a_job"}).status_code == 200


def test_an_anonymous_probe_cannot_multiply_its_queue_lookups(
    healthy_processes, django_assert_max_num_queries
):
    many = {"queue": [f"q{i}" for i in range(21)]}
    with django_assert_max_num_queries(0):
        response = Client().get(URL, many)
    assert response.status_code == 400
