"""Who may see the dashboard, and who may act."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from steady_queue.models import Job, Pause

from .test_pages import FRAGMENT_IDS, page_urls

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("page", list(FRAGMENT_IDS))
def test_anonymous_users_are_sent_to_the_login_page(client, jobs, page):
    target = page_urls(jobs)[page]
    response = client.get(target)
    assert response.status_code == 302
    assert response.url.startswith("/admin/login/?next=")


def test_anonymous_htmx_requests_redirect_the_whole_page(client, jobs):
    response = client.get(reverse("steady_queue_dashboard:overview"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response["HX-Redirect"].startswith("/admin/login/?next=")


@pytest.mark.parametrize("page", list(FRAGMENT_IDS))
def test_users_who_are_not_staff_are_forbidden(member_client, jobs, page):
    assert member_client.get(page_urls(jobs)[page]).status_code == 403


def test_inactive_staff_are_sent_to_log_in_again(db):
    from django.contrib.auth.models import User

    user = User.objects.create_user("gone", password="pw", is_staff=True, is_active=False)
    client = Client()
    client.force_login(user)  # the session outlives the deactivation
    response = client.get(reverse("steady_queue_dashboard:overview"))
    assert response.status_code == 302


@pytest.mark.parametrize("page", list(FRAGMENT_IDS))
def test_staff_without_the_permission_see_pages_without_action_buttons(viewer_client, jobs, page):
    response = viewer_client.get(page_urls(jobs)[page])
    assert response.status_code == 200
    html = response.content.decode()
    assert "hx-post" not in html and 'name="ids"' not in html


def test_staff_with_the_permission_see_action_buttons(operator_client, jobs):
    html = operator_client.get(reverse("steady_queue_dashboard:job-list", args=["failed"]))
    html = html.content.decode()
    assert "Retry selected" in html and f"/jobs/actions/job/retry/{jobs.failed.pk}/" in html


@pytest.mark.parametrize(
    "name,args,data",
    [
        ("job-retry", "failed", {}),
        ("job-discard", "ready", {}),
        ("job-cancel", "ready", {}),
        ("job-dispatch", "scheduled", {}),
        ("job-release", "blocked", {}),
        ("jobs-retry", None, {"scope": "all", "confirmed": "1"}),
        ("jobs-discard", None, {"scope": "all", "confirmed": "1"}),
        ("jobs-cancel", None, {"scope": "all", "confirmed": "1"}),
        ("queue-pause", None, {}),
        ("recurring-run", None, {}),
    ],
)
def test_staff_without_the_permission_cannot_act(viewer_client, jobs, name, args, data):
    target = {
        "job-retry": [jobs.failed.pk],
        "job-discard": [jobs.pending.pk],
        "job-cancel": [jobs.pending.pk],
        "job-dispatch": [jobs.scheduled.pk],
        "job-release": [jobs.blocked.pk],
        "jobs-retry": ["failed"],
        "jobs-discard": ["failed"],
        "jobs-cancel": ["ready"],
        "queue-pause": ["default"],
        "recurring-run": ["nightly"],
    }[name]
    response = viewer_client.post(reverse(f"steady_queue_dashboard:{name}", args=target), data)
    assert response.status_code == 403
    assert Job.objects.filter(pk=jobs.failed.pk, failed_execution__isnull=False).exists()
    assert Job.objects.filter(pk=jobs.pending.pk, ready_execution__isnull=False).exists()
    assert not Pause.objects.exists()


def test_anonymous_actions_go_to_the_login_page(client, jobs):
    response = client.post(reverse("steady_queue_dashboard:job-retry", args=[jobs.failed.pk]))
    assert response.status_code == 302 and response.url.startswith("/admin/login/")


def test_actions_need_the_csrf_token(jobs):
    from django.contrib.auth.models import User

    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("root", "r@example.com", "pw"))
    response = client.post(reverse("steady_queue_dashboard:job-retry", args=[jobs.failed.pk]))
    assert response.status_code == 403


def test_anonymous_actions_come_back_to_the_page_they_came_from(client, jobs):
    url = reverse("steady_queue_dashboard:job-retry", args=[jobs.failed.pk])
    response = client.post(url, {"next": "/jobs/failed/"})
    assert response.url == "/admin/login/?next=/jobs/failed/"


def test_anonymous_htmx_requests_come_back_to_the_current_page(client, jobs):
    response = client.get(
        reverse("steady_queue_dashboard:job-list", args=["failed"]),
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/jobs/failed/?queue=low",
    )
    assert response["HX-Redirect"] == "/admin/login/?next=/jobs/failed/%3Fqueue%3Dlow"
