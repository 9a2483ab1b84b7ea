"""docs/reference/dashboard.md: "Mount it" and "Who may use it", checked through HTTP only."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.tasks.acceptance import fail, receive

pytestmark = pytest.mark.django_db

DASHBOARD = "/jobs/"  # tests/urls.py mounts it as the docs say


def user(username: str, *, staff=True, active=True, superuser=False, manage=False) -> User:
    account = User.objects.create_user(username, password="pw", is_staff=staff, is_active=active)
    if superuser:
        account.is_superuser = True
        account.save()
    if manage:
        account.user_permissions.add(Permission.objects.get(codename="manage_jobs"))
    return account


def client_for(account: User | None, **kwargs) -> Client:
    client = Client(**kwargs)
    if account is not None:
        client.force_login(account)
    return client


def failed_job() -> Job:
    result = fail.enqueue("<script>alert('x')</script>")
    run_ready_jobs()
    return Job.objects.get(pk=result.id)


def job_page(client: Client, job: Job) -> str:
    listing = client.get(f"{DASHBOARD}failed/")
    assert listing.status_code == 200
    links = re.findall(rf'href="([^"]*/{job.pk}/)"', listing.content.decode())
    assert links, "the failed list links to the job"
    page = client.get(links[0])
    assert page.status_code == 200
    return page.content.decode()


def action_urls(html: str) -> list[str]:
    """Where the page's action buttons and forms post to."""
    return re.findall(r'(?:formaction|hx-post|action)="([^"]+)"', html)


def test_anonymous_visitors_go_to_login_url():
    response = Client().get(DASHBOARD)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
    assert "next=/jobs/" in response["Location"]


def test_logged_in_non_staff_get_403():
    assert client_for(user("plain", staff=False)).get(DASHBOARD).status_code == 403


def test_inactive_staff_cannot_look():
    response = client_for(user("gone", active=False)).get(DASHBOARD)
    assert response.status_code in (302, 403)


def test_staff_see_the_pages():
    client = client_for(user("staff"))
    assert client.get(DASHBOARD).status_code == 200
    for status in ("ready", "scheduled", "running", "blocked", "failed", "finished"):
        assert client.get(f"{DASHBOARD}{status}/").status_code == 200, status


def test_staff_without_permission_see_no_actions_and_post_gets_403():
    job = failed_job()
    manager_page = job_page(client_for(user("boss", manage=True)), job)
    retry = [url for url in action_urls(manager_page) if "retry" in url]
    assert retry, "a permission holder sees a retry action"

    viewer = client_for(user("viewer"))
    viewer_page = job_page(viewer, job)
    assert not [url for url in action_urls(viewer_page) if "retry" in url]
    assert viewer.post(retry[0]).status_code == 403
    assert Job.objects.get(pk=job.pk).state == "failed"


def test_permission_holder_and_superuser_can_act():
    job = failed_job()
    manager = client_for(user("boss", manage=True))
    retry = next(url for url in action_urls(job_page(manager, job)) if "retry" in url)
    assert manager.get(retry).status_code == 405  # actions are POST only
    response = manager.post(retry)
    assert response.status_code in (200, 302)
    assert Job.objects.get(pk=job.pk).state == "ready"

    from steady_queue_dashboard.models import AuditEntry

    assert AuditEntry.objects.count() == 1

    second = failed_job()
    admin = client_for(user("root", superuser=True))
    retry = next(url for url in action_urls(job_page(admin, second)) if "retry" in url)
    assert admin.post(retry).status_code in (200, 302)
    assert Job.objects.get(pk=second.pk).state == "ready"


def test_actions_need_the_csrf_token():
    job = failed_job()
    manager = user("boss", manage=True)
    retry = next(url for url in action_urls(job_page(client_for(manager), job)) if "retry" in url)
    strict = client_for(manager, enforce_csrf_checks=True)
    assert strict.post(retry).status_code == 403
    assert Job.objects.get(pk=job.pk).state == "failed"


def test_arguments_and_tracebacks_are_escaped():
    job = failed_job()
    receive.enqueue("<b>bold</b>")
    html = job_page(client_for(user("staff")), job)
    assert "<script>alert(" not in html
    assert "&lt;script&gt;" in html
