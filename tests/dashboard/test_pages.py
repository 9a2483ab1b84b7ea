"""Every page renders in full, and only its fragment for htmx requests."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

STATUSES = [
    "ready",
    "scheduled",
    "running",
    "blocked",
    "throttled",
    "paused",
    "waiting",
    "failed",
    "cancelled",
    "finished",
]


def page_urls(jobs) -> dict[str, str]:
    urls = {
        "overview": reverse("steady_queue_dashboard:overview"),
        "overview-day": reverse("steady_queue_dashboard:overview") + "?span=day",
        "queues": reverse("steady_queue_dashboard:queue-list"),
        "queue": reverse("steady_queue_dashboard:queue-detail", args=["low"]),
        "job": reverse("steady_queue_dashboard:job-detail", args=[jobs.failed.pk]),
        "processes": reverse("steady_queue_dashboard:process-list"),
        "recurring": reverse("steady_queue_dashboard:recurring-list"),
        "concurrency": reverse("steady_queue_dashboard:concurrency"),
        "rate-limits": reverse("steady_queue_dashboard:rate-limits"),
        "batches": reverse("steady_queue_dashboard:batch-list"),
        "workflows": reverse("steady_queue_dashboard:workflow-list"),
        "audit": reverse("steady_queue_dashboard:audit-log"),
        "tasks": reverse("steady_queue_dashboard:tasks"),
        "waits": reverse("steady_queue_dashboard:wait-list"),
        "archive": reverse("steady_queue_dashboard:archive-list"),
        "retention": reverse("steady_queue_dashboard:retention"),
        "history": reverse("steady_queue_dashboard:history-list"),
    }
    for status in STATUSES:
        urls[status] = reverse("steady_queue_dashboard:job-list", args=[status])
    return urls


FRAGMENT_IDS = {
    "overview": 'id="overview"',
    "overview-day": 'id="overview"',
    "queues": 'id="queue-table"',
    "queue": 'id="queue-detail"',
    "job": 'id="job-detail"',
    "processes": 'id="process-tree"',
    "recurring": 'id="recurring-table"',
    "concurrency": 'id="concurrency-table"',
    "rate-limits": 'id="rate-limit-table"',
    "batches": 'id="batch-table"',
    "workflows": 'id="workflow-table"',
    "audit": 'id="audit-table"',
    "tasks": 'id="task-table"',
    "waits": 'id="wait-table"',
    "archive": 'id="archive-table"',
    "retention": 'id="retention-panel"',
    "history": 'id="history-table"',
    **{status: 'id="job-list"' for status in STATUSES},
}


@pytest.mark.parametrize("page", list(FRAGMENT_IDS))
def test_page_renders_in_full(admin_client, jobs, page):
    response = admin_client.get(page_urls(jobs)[page])
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html and FRAGMENT_IDS[page] in html


@pytest.mark.parametrize("page", list(FRAGMENT_IDS))
def test_htmx_request_gets_only_the_fragment(htmx, jobs, page):
    response = htmx.get(page_urls(jobs)[page])
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html and '<nav class="nav"' not in html
    assert html.lstrip().startswith("<div " + FRAGMENT_IDS[page]) or FRAGMENT_IDS[page] in html


def test_a_list_fragment_also_refreshes_the_status_counts_out_of_band(htmx, jobs):
    html = htmx.get(reverse("steady_queue_dashboard:job-list", args=["failed"])).content.decode()
    assert '<nav id="status-tabs"' in html and 'hx-swap-oob="true"' in html


def test_a_history_restore_gets_the_whole_page(htmx, jobs):
    url = reverse("steady_queue_dashboard:job-list", args=["failed"])
    html = htmx.get(url, HTTP_HX_HISTORY_RESTORE_REQUEST="true").content.decode()
    assert "<html" in html


def test_pending_messages_ride_along_with_a_fragment(htmx, jobs):
    htmx.post(reverse("steady_queue_dashboard:queue-pause", args=["low"]), HTTP_HX_REQUEST="")
    html = htmx.get(reverse("steady_queue_dashboard:queue-list")).content.decode()
    assert (
        'id="sq-messages" class="messages" role="status" aria-live="polite" hx-swap-oob="true"'
        in html
    )
    assert "Queue low is paused" in html
