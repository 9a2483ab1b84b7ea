"""Secrets in arguments and return values never reach the dashboard's HTML or its search."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import reverse

from steady_queue import arguments
from steady_queue.models import Job, RecurringTask
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.masking import MASK
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks
from tests.tasks import masked as masked_tasks

pytestmark = pytest.mark.django_db

SECRETS = ["hunter2-SECRET", "tok-XYZ-SECRET", "Bearer abc-SECRET"]


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def enqueue_secrets() -> Job:
    result = tasks.record.enqueue(
        "visible-arg",
        password="hunter2-SECRET",
        api_token="tok-XYZ-SECRET",
        request={"headers": {"Authorization": "Bearer abc-SECRET"}, "path": "/visible"},
    )
    return Job.objects.get(pk=result.id)


def assert_no_secret(html: str) -> None:
    for secret in [*SECRETS, "4111111111111111", "tok-RETURNED-SECRET"]:
        assert secret not in html


def test_keys_matching_patterns_are_masked_in_lists_and_detail(admin_client):
    job = enqueue_secrets()
    for page in [
        url("job-list", "ready"),
        url("job-detail", job.pk),
        url("queue-detail", "default"),
    ]:
        html = admin_client.get(page).content.decode()
        assert_no_secret(html)
        assert MASK in html and "visible-arg" in html
    detail = admin_client.get(url("job-detail", job.pk)).content.decode()
    assert "/visible" in detail  # only the masked keys are hidden


def test_return_values_are_masked(admin_client):
    result = masked_tasks.charge.enqueue("4111111111111111", 10)
    run_ready_jobs()
    html = admin_client.get(url("job-detail", result.id)).content.decode()
    assert_no_secret(html)
    assert "r-1" in html and MASK in html


def test_a_task_masks_its_own_parameters_positional_or_keyword(admin_client):
    by_position = masked_tasks.charge.enqueue("4111111111111111", 10)
    by_name = masked_tasks.charge.enqueue(card_number="4111111111111111", amount=12)
    for page in [
        url("job-list", "ready"),
        url("job-detail", by_position.id),
        url("job-detail", by_name.id),
    ]:
        html = admin_client.get(page).content.decode()
        assert_no_secret(html)
        assert MASK in html


def test_the_argument_search_never_finds_a_masked_value(admin_client):
    enqueue_secrets()
    masked_tasks.charge.enqueue("4111111111111111", 10)
    listing = url("job-list", "ready")

    def rows(search: str) -> int:
        html = admin_client.get(listing, {"args": search}).content.decode()
        return html.count('id="job-row-')

    assert rows("password=hunter2-SECRET") == 0
    assert rows("api_token=tok-XYZ-SECRET") == 0
    assert rows("card_number=4111111111111111") == 0
    assert rows("4111111111111111") == 0
    assert rows('"4111111111111111"') == 0
    # Unmasked values are still found: the search works, it just skips secrets.
    assert rows("visible-arg") == 1
    assert rows("10") == 0  # charge masks position 0 only, but its jobs are skipped entirely


def test_audit_entries_keep_masked_arguments_only(admin_client):
    result = tasks.fail.enqueue(password="hunter2-SECRET")  # fails: unexpected keyword
    run_ready_jobs()
    admin_client.post(url("job-retry", result.id))
    entry = AuditEntry.objects.get()
    assert "hunter2-SECRET" not in str(entry.details) + entry.target + entry.message
    assert MASK in str(entry.details)
    html = admin_client.get(url("audit-log")).content.decode()
    assert_no_secret(html)


def test_recurring_task_arguments_are_masked(admin_client):
    RecurringTask.objects.create(
        key="sync",
        schedule="*/5 * * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize([], {"token": "tok-XYZ-SECRET"}),
        static=False,
    )
    for page in [url("recurring-list"), url("recurring-detail", "sync")]:
        html = admin_client.get(page).content.decode()
        assert_no_secret(html)
        assert MASK in html


def test_patterns_and_masked_arguments_come_from_the_setting(admin_client):
    result = tasks.record.enqueue(pin="1234-VISIBLE?", password="pw-shown", account_id=998877)
    dashboard = {
        "MASK_PATTERNS": ["pin"],
        "MASKED_ARGUMENTS": {"tests.tasks.dashboard.record": ["account_id"]},
    }
    with override_settings(STEADY_QUEUE_DASHBOARD=dashboard):
        html = admin_client.get(url("job-detail", result.id)).content.decode()
        assert "1234-VISIBLE?" not in html and "998877" not in html and "pw-shown" in html
        search = admin_client.get(url("job-list", "ready"), {"args": "account_id=998877"})
        assert 'id="job-row-' not in search.content.decode()
    html = admin_client.get(url("job-detail", result.id)).content.decode()
    assert "pw-shown" not in html and "998877" in html


def test_a_task_module_that_fails_to_import_still_shows_masked_arguments(admin_client):
    job = Job.objects.create(
        task_path="tests.tasks.explosive.anything",
        queue_name="default",
        arguments=arguments.serialize(["shown"], {"password": "hunter2-SECRET"}),
    )
    dashboard = {"MASKED_ARGUMENTS": {"tests.tasks.explosive.anything": ["x"]}}
    with override_settings(STEADY_QUEUE_DASHBOARD=dashboard):
        response = admin_client.get(url("job-detail", job.pk))
    assert response.status_code == 200
    html = response.content.decode()
    assert "shown" in html and MASK in html
    assert_no_secret(html)


def test_a_search_on_a_masked_keyword_can_be_described_without_its_value():
    from steady_queue_dashboard.masking import mask_search

    assert mask_search("password=hunter2") == f"password={MASK}"
    assert mask_search(" api_token = x") == f"api_token={MASK}"
    assert mask_search("account_id=42") == "account_id=42"
    assert mask_search("42") == "42" and mask_search("a=b=c") == "a=b=c"


def test_an_action_on_a_masked_search_never_echoes_the_secret(admin_client):
    enqueue_secrets()
    action = url("jobs-discard", "ready")
    data = {"scope": "all", "args": "password=hunter2-SECRET"}
    confirm = admin_client.post(action, data, HTTP_HX_REQUEST="true").content.decode()
    assert "No job matches" in confirm and f"password={MASK}" in confirm
    assert "hunter2" not in confirm
    assert not AuditEntry.objects.exists() and Job.objects.count() == 1
