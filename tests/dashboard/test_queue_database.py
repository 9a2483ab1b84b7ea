"""With the queue tables on their own alias, the dashboard reads and acts there only.

No router is installed (but for the fill command, which needs it as a project with a
queue database does): the dashboard has no routing of its own, the queue models'
manager decides. Its own tables (the audit log) and Django's (users, sessions) stay
on "default".
"""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.urls import reverse

from steady_queue.models import Job, Pause
from steady_queue_dashboard.listings import LISTINGS
from steady_queue_dashboard.models import AuditEntry
from tests.queue_database import DATABASES, captured, queue_alias, queue_database, sql

from .page_forms import confirm_form, hidden_fields

pytestmark = pytest.mark.django_db(transaction=True, databases=DATABASES)

QUEUE_TABLES = re.compile(
    "|".join(
        rf"[`\"]{re.escape(model._meta.db_table)}[`\"]"
        for model in apps.get_app_config("steady_queue").get_models()
    )
)


@pytest.fixture(scope="module", autouse=True)
def _queue_alias(django_db_setup):
    with queue_alias():
        yield


@pytest.fixture
def queue(request):
    """Jobs in every state, enqueued and run through the engine on the "queue" alias."""
    with queue_database():
        yield request.getfixturevalue("jobs")


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def assert_queue_tables_read_on_queue_only(on_queue, on_default) -> None:
    assert [q for q in sql(on_default) if QUEUE_TABLES.search(q)] == []
    assert any(QUEUE_TABLES.search(q) for q in sql(on_queue))


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
    *[("job-list", status) for status in LISTINGS],
]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: "/".join(page))
def test_pages_read_the_queue_tables_on_the_queue_alias(admin_client, queue, page):
    with captured() as (on_queue, on_default):
        response = admin_client.get(url(*page))
    assert response.status_code == 200
    assert_queue_tables_read_on_queue_only(on_queue, on_default)


def test_a_job_page_reads_the_queue_alias(admin_client, queue):
    with captured() as (on_queue, on_default):
        response = admin_client.get(url("job-detail", queue.failed.pk))
    assert response.status_code == 200 and f"#{queue.failed.pk}" in response.content.decode()
    assert_queue_tables_read_on_queue_only(on_queue, on_default)


def test_actions_change_the_queue_alias_and_audit_on_default(admin_client, queue):
    with captured() as (on_queue, on_default):
        admin_client.post(url("job-retry", queue.failed.pk))
        asked = admin_client.post(url("job-discard", queue.pending.pk)).content.decode()
        admin_client.post(url("job-discard", queue.pending.pk), confirm_form(asked))
        admin_client.post(url("queue-pause", "low"))
        asked = admin_client.post(url("jobs-release", "blocked"), {"scope": "all"})
        asked = admin_client.post(
            url("jobs-release", "blocked"), confirm_form(asked.content.decode())
        )
        # No slot of its key is free: run it over the limit, as the page offers.
        forced = hidden_fields(asked.content.decode(), "sq-release-form")
        admin_client.post(url("jobs-release", "blocked"), forced)
    assert_queue_tables_read_on_queue_only(on_queue, on_default)
    assert Job.objects.with_execution().get(pk=queue.failed.pk).state == "ready"
    assert not Job.objects.filter(pk=queue.pending.pk).exists()
    assert Pause.objects.filter(queue_name="low").exists()
    assert Job.objects.with_execution().get(pk=queue.blocked.pk).state == "ready"
    assert AuditEntry.objects.count() == 5


def test_the_fill_command_writes_the_queue_alias(queue, settings):
    settings.DATABASE_ROUTERS = ["steady_queue.routers.SteadyQueueRouter"]
    sizes = {
        "finished": 20,
        "failed": 5,
        "scheduled": 5,
        "ready": 5,
        "blocked": 2,
        "throttled": 2,
        "claimed": 2,
        "batches": 2,
        "workflows": 3,
    }
    with captured() as (on_queue, on_default):
        call_command(
            "steady_queue_dashboard_fill", batch_size=10, days=1, stdout=StringIO(), **sizes
        )
    assert_queue_tables_read_on_queue_only(on_queue, on_default)
    assert Job.objects.filter(finished_at__isnull=False).count() >= 20
