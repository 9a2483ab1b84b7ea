"""The audit log keeps what an action did: a bulk action failing part-way, and one job
discarded after its confirmation (issue 10, defects 4 and 7)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError

from steady_queue.models import Job, job_retryable
from steady_queue_dashboard.models import AuditEntry

from .conftest import failed_ids
from .page_forms import confirm_form, url

pytestmark = pytest.mark.django_db


def test_a_bulk_action_failing_part_way_is_audited(admin_client, failures, monkeypatch):
    admin_client.raise_request_exception = False
    original = job_retryable._retry_batch
    done = {"n": 0}

    def flaky(failed, batch_size):
        if done["n"] >= 1 and failed.exists():
            raise DatabaseError("disk full")
        retried = original(failed, 1)  # (how many, the last job id), or None: no more
        done["n"] += retried[0] if retried else 0
        return retried

    monkeypatch.setattr(job_retryable, "_retry_batch", flaky)
    monkeypatch.setattr("steady_queue_dashboard.adapter.actions.BATCH_SIZE", 1, raising=False)
    response = admin_client.post(
        url("jobs-retry", "failed"), {"scope": "selected", "ids": [*failed_ids()]}
    )
    assert response.status_code < 500
    entry = AuditEntry.objects.get()
    assert not entry.succeeded and entry.affected == 1
    assert "disk full" in entry.message and "1" in entry.message
    assert len(failed_ids()) == 3


# Discarding one job confirms first; the audit keeps what it acted on.


def test_discarding_one_job_asks_first_and_the_audit_keeps_the_job(admin_client, jobs):
    page = admin_client.post(url("job-discard", jobs.failed.pk)).content.decode()
    assert Job.objects.filter(pk=jobs.failed.pk).exists()
    assert "tests.tasks.dashboard.fail" in page
    admin_client.post(url("job-discard", jobs.failed.pk), confirm_form(page))
    assert not Job.objects.filter(pk=jobs.failed.pk).exists()
    entry = AuditEntry.objects.get()
    assert entry.details["task"] == "tests.tasks.dashboard.fail"
    assert entry.details["queue"] == "default" and entry.details["state"] == "failed"
    assert "it broke" in entry.details["arguments"]
    assert entry.link == url("job-detail", jobs.failed.pk)
    html = admin_client.get(url("audit-log")).content.decode()
    assert f'href="{entry.link}"' in html and "tests.tasks.dashboard.fail" in html
