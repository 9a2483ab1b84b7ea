"""``READ_DATABASE``: pages read a replica, actions read and write the queue database.

"replica" is a second connection to the test database (as a streaming replica is a
second server with the same rows), so each query shows which alias it took. What a
replica that lags behind shows is played by changing a job on the primary between
the page and the action.
"""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from steady_queue.models import Job
from steady_queue_dashboard.listings import LISTINGS
from tests.queue_database import queue_alias, sql

REPLICA = "replica"
pytestmark = pytest.mark.django_db(transaction=True, databases=["default", REPLICA])
QUEUE_TABLES = re.compile(
    "|".join(
        rf"[`\"]{re.escape(model._meta.db_table)}[`\"]"
        for model in apps.get_app_config("steady_queue").get_models()
    )
)


@pytest.fixture(scope="module", autouse=True)
def _replica_alias(django_db_setup):
    with queue_alias(REPLICA):
        yield


@pytest.fixture(autouse=True)
def read_replica(settings):
    settings.STEADY_QUEUE_DASHBOARD = {"READ_DATABASE": REPLICA}


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def queue_queries(context: CaptureQueriesContext) -> list[str]:
    return [query for query in sql(context) if QUEUE_TABLES.search(query)]


class Captured:
    def __enter__(self):
        self.replica = CaptureQueriesContext(connections[REPLICA]).__enter__()
        self.primary = CaptureQueriesContext(connections["default"]).__enter__()
        return self

    def __exit__(self, *exc):
        self.primary.__exit__(*exc)
        self.replica.__exit__(*exc)


PAGES = [
    ("overview",),
    ("queue-list",),
    ("queue-detail", "low"),
    ("process-list",),
    ("recurring-list",),
    ("concurrency",),
    ("rate-limits",),
    ("batch-list",),
    ("workflow-list",),
    ("error-groups",),
    ("tasks",),
    *[("job-list", status) for status in LISTINGS],
]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: "/".join(page))
def test_pages_read_the_replica_only(admin_client, jobs, page):
    with Captured() as captured:
        response = admin_client.get(url(*page))
    assert response.status_code == 200
    assert queue_queries(captured.primary) == []
    assert queue_queries(captured.replica)


def test_a_job_page_and_a_confirmation_read_the_replica(admin_client, jobs):
    with Captured() as captured:
        assert admin_client.get(url("job-detail", jobs.failed.pk)).status_code == 200
        assert admin_client.get(url("error-groups")).status_code == 200
    assert queue_queries(captured.primary) == []


def test_actions_read_and_write_the_primary_only(admin_client, jobs):
    with Captured() as captured:
        admin_client.post(url("job-retry", jobs.failed.pk))
        admin_client.post(url("queue-pause", "low"))
    assert queue_queries(captured.replica) == []
    assert queue_queries(captured.primary)
    assert Job.objects.with_execution().get(pk=jobs.failed.pk).state == "ready"


def test_an_action_on_a_job_that_moved_since_the_page_says_so(admin_client, jobs):
    page = admin_client.get(url("job-list", "failed")).content.decode()
    assert f"#{jobs.failed.pk}" in page or str(jobs.failed.pk) in page
    jobs.failed.retry()  # meanwhile, on the primary: the replica had not caught up
    response = admin_client.post(url("job-retry", jobs.failed.pk), follow=True)
    text = response.content.decode()
    assert f"Job {jobs.failed.pk} is ready" in text and "only failed jobs" in text
    assert Job.objects.with_execution().get(pk=jobs.failed.pk).state == "ready"


def test_without_the_setting_pages_read_the_queue_database(admin_client, jobs, settings):
    settings.STEADY_QUEUE_DASHBOARD = {}
    with Captured() as captured:
        admin_client.get(url("overview"))
    assert queue_queries(captured.replica) == []
    assert queue_queries(captured.primary)


def test_a_read_database_that_is_no_alias_is_a_system_check_error(settings):
    from django.core import checks

    settings.STEADY_QUEUE_DASHBOARD = {"READ_DATABASE": "replicaa"}
    found = [m for m in checks.run_checks() if m.id == "steady_queue_dashboard.E004"]
    assert len(found) == 1 and "'replicaa'" in found[0].msg
    settings.STEADY_QUEUE_DASHBOARD = {"READ_DATABASE": REPLICA}
    assert not [m for m in checks.run_checks() if m.id == "steady_queue_dashboard.E004"]
