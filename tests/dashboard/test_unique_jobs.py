"""A unique job's page shows its key, its period and which job holds the key."""

from __future__ import annotations

import pytest
from django.urls import reverse

from steady_queue.models import Job, UniqueLock
from steady_queue.testing import run_ready_jobs
from tests import tasks as plain
from tests.tasks import unique as tasks

pytestmark = pytest.mark.django_db


def detail(client, job_id) -> str:
    response = client.get(reverse("steady_queue_dashboard:job-detail", args=[job_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_unique_job_shows_its_key_held_until_it_ends(admin_client):
    result = tasks.sync_account.enqueue(7)

    html = detail(admin_client, result.id)

    assert "Unique key" in html
    assert '<span class="mono">7</span>' in html
    assert "one job until it ends" in html and "held until this job ends" in html


def test_a_period_job_shows_its_period_and_when_its_key_expires(admin_client):
    result = tasks.digest.enqueue(3)

    html = detail(admin_client, result.id)

    assert "one job per 1 h" in html
    assert "held until" in html and "held until this job ends" not in html


def test_the_default_key_is_shown_as_a_digest_of_the_arguments(admin_client):
    result = tasks.by_arguments.enqueue(7, password="hunter2")

    html = detail(admin_client, result.id)

    assert "sha256:" in html and "digest of every argument" in html
    assert "hunter2" not in html  # masked in the arguments, and not shown through the key


def test_a_job_that_ended_shows_its_key_free(admin_client):
    result = tasks.sync_account.enqueue(7)
    run_ready_jobs()

    assert "free" in detail(admin_client, result.id)


def test_a_retried_job_shows_the_newer_job_holding_its_key(admin_client, htmx):
    first = tasks.sync_account.enqueue(7)
    tasks.FAILURES.append("down")
    run_ready_jobs()
    newer = tasks.sync_account.enqueue(7)
    Job.objects.get(pk=first.id).retry()
    assert UniqueLock.objects.get().job_id == int(newer.id)

    html = detail(htmx, first.id)  # the fragment the page refreshes itself with

    assert "held by" in html
    assert reverse("steady_queue_dashboard:job-detail", args=[newer.id]) in html


def test_a_job_of_a_task_that_is_not_unique_shows_no_key(admin_client):
    result = plain.add.enqueue(1, 2)
    assert "Unique key" not in detail(admin_client, result.id)


def test_the_key_costs_no_query_for_a_job_that_holds_it(admin_client, django_assert_num_queries):
    plain_job, unique_job = plain.add.enqueue(1, 2), tasks.sync_account.enqueue(7)
    detail(admin_client, plain_job.id)  # warm the session and the task imports

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as plain_queries:
        detail(admin_client, plain_job.id)
    with django_assert_num_queries(len(plain_queries)):
        detail(admin_client, unique_job.id)
