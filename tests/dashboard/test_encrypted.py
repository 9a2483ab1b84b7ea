"""An encrypted task's jobs in the console: "encrypted" everywhere, revealed only to a
user with ``reveal_arguments``, each reveal audited; bounded queries."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from steady_queue.encryption import seal_text
from steady_queue.models import Job, JobLogLine
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import encrypted as tasks

pytestmark = pytest.mark.django_db

CARD = "4111-1111-1111-1111"
# The job page's budget (tests/dashboard/test_queries.py) and the reveal's: the session,
# the user and their permissions, the job, its log lines, its durable records, the audit
# entry.
JOB_PAGE = 7
REVEAL = 8


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def client_with(*codenames: str) -> Client:
    user = User.objects.create_user("-".join(codenames) or "staff", password="pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator():
    """Staff who may act and read logs, but not reveal."""
    return client_with("manage_jobs", "view_joblogline", "edit_jobs")


@pytest.fixture
def revealer():
    return client_with("view_joblogline", "reveal_arguments")


@pytest.fixture
def finished() -> Job:
    result = tasks.charge.enqueue(CARD, amount=5)
    run_ready_jobs()
    job = Job.objects.get(pk=result.id)
    JobLogLine.objects.create(
        job=job,
        attempt=1,
        number=1,
        logged_at=timezone.now(),
        level=logging.WARNING,
        logger="tests.encrypted",
        message=seal_text(f"charging card {CARD}"),
    )
    return job


@pytest.fixture
def failed() -> Job:
    result = tasks.explode.enqueue(CARD)
    run_ready_jobs()
    return Job.objects.get(pk=result.id)


def test_without_the_permission_every_page_shows_encrypted_and_no_plaintext(
    operator, finished, failed, django_assert_max_num_queries
):
    pages = [
        url("job-detail", finished.pk),
        url("job-detail", failed.pk),
        url("job-logs", finished.pk),
        url("job-list", "finished"),
        url("job-list", "failed"),
        url("error-groups"),
    ]
    for page in pages:
        html = operator.get(page).text
        assert CARD not in html and "declined card" not in html and "paid with" not in html, page
        assert "encrypted" in html, page
    with django_assert_max_num_queries(JOB_PAGE):
        html = operator.get(url("job-detail", finished.pk)).text
    assert "Reveal" not in html
    assert 'id="job-edit"' not in html and 'id="job-duplicate"' not in html


def test_revealing_without_the_permission_is_refused_and_writes_nothing(operator, finished):
    response = operator.post(url("job-reveal", finished.pk))

    assert response.status_code == 403
    assert not AuditEntry.objects.filter(action="reveal").exists()


def test_revealing_with_the_permission_shows_the_plaintext_and_is_audited(
    revealer, finished, django_assert_max_num_queries
):
    page = revealer.get(url("job-detail", finished.pk)).text
    assert "Reveal (audited)" in page and CARD not in page

    with django_assert_max_num_queries(REVEAL):
        html = revealer.post(url("job-reveal", finished.pk)).text

    assert f"&quot;{CARD}&quot;" in html  # the arguments (JSON, escaped)
    assert f"paid with {CARD}" in html  # the return value
    assert f"charging card {CARD}" in html  # the log line
    assert f"halfway for {CARD}" in html  # the progress message
    entry = AuditEntry.objects.get(action="reveal")
    assert entry.username == "view_joblogline-reveal_arguments"
    assert entry.target == f"job {finished.pk}" and CARD not in repr(entry.details)


def test_a_revealed_error_shows_its_message_and_traceback(revealer, failed):
    html = revealer.post(url("job-reveal", failed.pk), HTTP_HX_REQUEST="true").text

    assert f"declined card {CARD}" in html
    assert "Traceback" in html


def test_a_reveal_is_a_post(revealer, finished):
    assert revealer.get(url("job-reveal", finished.pk)).status_code == 405


def test_the_change_forms_refuse_an_encrypted_job(operator, finished):
    html = operator.get(url("job-duplicate", finished.pk)).text

    assert "task is encrypted" in html
    assert CARD not in html


def test_an_archived_encrypted_job_shows_encrypted_never_an_empty_call_or_ciphertext(
    operator, failed
):
    from steady_queue.models import ArchivedJob

    row = ArchivedJob.from_job(failed, failed.failed_execution, rule="failed, archived")
    row.save()
    assert row.error_message.startswith("sq-encrypted:")  # stored sealed, as the live row

    for name in ("archive-list", "archive-detail"):
        args = [row.pk] if name == "archive-detail" else []
        response = operator.get(reverse(f"steady_queue_dashboard:{name}", args=args))
        page = response.content.decode()
        assert response.status_code == 200, name
        assert CARD not in page and "declined card" not in page, name
        assert "sq-encrypted:" not in page, name
        assert "encrypted" in page, name
    detail = operator.get(reverse("steady_queue_dashboard:archive-detail", args=[row.pk]))
    assert '"args": []' not in detail.content.decode().replace("&quot;", '"')
