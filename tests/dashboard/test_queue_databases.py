"""One dashboard, two queue databases: each mount shows and changes its own backend's jobs."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.core import checks
from django.db import connections
from django.test.utils import CaptureQueriesContext, override_settings

from steady_queue import db as queue_db
from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.listings import LISTINGS
from tests.queue_database import sql
from tests.tasks import billing
from tests.tasks import dashboard as tasks

pytestmark = [
    pytest.mark.django_db(databases=["default", "billing"]),
    pytest.mark.urls("tests.dashboard.urls_two_backends"),
]
QUEUE_TABLES = re.compile(
    "|".join(
        rf"[`\"]{re.escape(model._meta.db_table)}[`\"]"
        for model in apps.get_app_config("steady_queue").get_models()
    )
)


@pytest.fixture
def both(db):
    """A failed job in each database."""
    tasks.fail.enqueue("default broke")
    run_ready_jobs()
    billing.refuse.enqueue(7)
    with queue_db.using_alias("billing"):
        run_ready_jobs()
    default_job = Job.objects.db_manager("default").get()
    billing_job = Job.objects.db_manager("billing").get()
    return default_job, billing_job


def queue_queries(context: CaptureQueriesContext) -> list[str]:
    return [q for q in sql(context) if QUEUE_TABLES.search(q)]


@pytest.mark.parametrize("status", list(LISTINGS))
def test_each_mount_lists_its_own_database(admin_client, both, status):
    with (
        CaptureQueriesContext(connections["billing"]) as on_billing,
        CaptureQueriesContext(connections["default"]) as on_default,
    ):
        page = admin_client.get(f"/jobs-billing/{status}/")
    assert page.status_code == 200
    assert queue_queries(on_default) == []
    assert queue_queries(on_billing)


def test_pages_link_within_their_mount_and_switch_between_them(admin_client, both):
    page = admin_client.get("/jobs-billing/failed/").content.decode()
    assert "tests.tasks.billing.refuse" in page and "tests.tasks.dashboard.fail" not in page
    assert 'href="/jobs-billing/queues/"' in page  # the navigation stays on the mount
    assert 'href="/jobs/queues/"' not in page
    # The switcher: one link per mount, the current one marked.
    assert re.search(r'<a href="/jobs-billing/" aria-current="true">billing</a>', page)
    assert '<a href="/jobs/">default</a>' in page
    default = admin_client.get("/jobs/failed/").content.decode()
    assert "tests.tasks.dashboard.fail" in default and "billing.refuse" not in default


def test_an_action_changes_the_job_of_its_mount_only(admin_client, both):
    _, billing_job = both
    response = admin_client.post(f"/jobs-billing/actions/job/retry/{billing_job.pk}/")
    assert response.status_code == 302 and response.url.startswith("/jobs-billing/")
    assert Job.objects.db_manager("billing").with_execution().get().state == "ready"
    assert Job.objects.db_manager("default").with_execution().get().state == "failed"


def test_a_job_page_of_another_database_is_not_found_here(admin_client, both):
    billing.invoice.enqueue(8)  # a second billing job: its id exists only there
    pk = Job.objects.db_manager("billing").order_by("-pk").first().pk
    assert admin_client.get(f"/jobs-billing/{pk}/").status_code == 200
    assert admin_client.get(f"/jobs/{pk}/").status_code == 404


def test_a_mount_that_names_no_backend_is_a_check_error():
    with override_settings(ROOT_URLCONF="tests.dashboard.urls_bad_mount"):
        found = [m for m in checks.run_checks() if m.id == "steady_queue_dashboard.E005"]
    assert len(found) == 1 and "'nope'" in found[0].msg
