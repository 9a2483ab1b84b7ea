"""Issue 10's defects: what an operator sees is what an action changes, and nothing 500s."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core import checks
from django.db import DatabaseError
from django.test import override_settings
from django.utils import timezone

from steady_queue.models import FailedExecution, Job, Pause, RecurringTask, job_retryable
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard import joblist
from steady_queue_dashboard.filters import JobFilter
from steady_queue_dashboard.listings import LISTINGS
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks

from .trust_helpers import confirm_form, cursor, hidden_fields, url

pytestmark = pytest.mark.django_db


def local(when) -> str:
    return timezone.localtime(when).strftime("%Y-%m-%dT%H:%M")


@pytest.fixture
def failures(db) -> tuple[list[int], int]:
    """Three recent failures and one from two days ago; return (recent ids, old id)."""
    results = [tasks.fail.enqueue(f"error {n}") for n in range(4)]
    run_ready_jobs()
    old = int(results[0].id)
    FailedExecution.objects.filter(job_id=old).update(created_at=timezone.now() - timedelta(days=2))
    return [int(r.id) for r in results[1:]], old


def failed_ids() -> set[int]:
    return set(Job.objects.filter(failed_execution__isnull=False).values_list("pk", flat=True))


# Defect 1: filter and pagination parameters never share names.


def test_filters_and_pagination_never_share_a_parameter_name():
    from steady_queue_dashboard.joblist import PAGE_PARAMS

    for listing in LISTINGS.values():
        names = set(JobFilter(queryset=Job.objects.none(), listing=listing).filters)
        assert not names & set(PAGE_PARAMS), listing.status


def test_discard_all_matching_keeps_the_date_filter(admin_client, failures):
    recent, old = failures
    before = local(timezone.now() - timedelta(days=1))
    page = admin_client.get(url("job-list", "failed") + f"?before={before}").content.decode()
    assert f"job-row-{old}" in page and f"job-row-{recent[0]}" not in page
    data = hidden_fields(page, "bulk-form") | {"scope": ["all"]}
    confirm = admin_client.post(url("jobs-discard", "failed"), data).content.decode()
    assert "Discard 1 job" in confirm
    admin_client.post(url("jobs-discard", "failed"), confirm_form(confirm))
    assert failed_ids() == set(recent)


def test_page_two_keeps_its_filter_without_a_false_warning(admin_client, failures, monkeypatch):
    monkeypatch.setattr(joblist, "PAGE_SIZE", 1)
    after = local(timezone.now() - timedelta(days=1))
    first = admin_client.get(url("job-list", "failed") + f"?after={after}").content.decode()
    assert "Some filters are not valid" not in first
    next_link = re.search(r'href="([^"]+)" hx-get="[^"]+" hx-push-url="true" rel="next"', first)
    second = admin_client.get(next_link.group(1).replace("&amp;", "&")).content.decode()
    assert "Some filters are not valid" not in second
    assert f'value="{after}"' in second  # the date box still holds the filter, not a cursor
    first_link = re.search(r'href="([^"]+)"[^>]*>« First', second).group(1)
    assert "after=" in first_link and "page_after" not in first_link


# Defect 2: crafted links cannot widen a bulk action or skip its confirmation.


def test_a_crafted_link_cannot_add_fields_to_the_bulk_form(admin_client, failures):
    _recent, old = failures
    link = url("job-list", "failed") + f"?confirmed=1&ids={old}&scope=all"
    page = admin_client.get(link).content.decode()
    fields = hidden_fields(page, "bulk-form")
    assert not {"confirmed", "ids", "scope", "confirm"} & set(fields)


def test_confirmed_in_the_request_does_not_skip_confirmation(admin_client, failures):
    before = failed_ids()
    for forged in ({"confirmed": "1"}, {"confirm": "forged-token"}):
        response = admin_client.post(url("jobs-discard", "failed"), {"scope": "all", **forged})
        assert response.status_code in (200, 400)
    assert failed_ids() == before


def test_a_confirmation_token_cannot_be_reused_for_other_filters(admin_client, failures):
    recent, _old = failures
    before = local(timezone.now() - timedelta(days=1))
    page = admin_client.post(
        url("jobs-discard", "failed"), {"scope": "all", "before": before}
    ).content.decode()
    data = confirm_form(page)
    data.pop("before", None)  # try to widen to every failed job with the same token
    admin_client.post(url("jobs-discard", "failed"), data)
    assert set(recent) <= failed_ids()


# Defect 3: malformed input answers 400 or the page, never 500.

BAD_CURSORS = [
    cursor([None, None]),
    cursor(["x", "y"]),
    cursor([{"a": 1}, [1]]),
    cursor([1, 2]),
    cursor([10**40, 10**40]),
    cursor(["9999-12-31T23:59:59+00:00", -(10**30)]),
    cursor([1e308, "NaN"]),
    "Infinity",
    "%%%",
    "W10",
]
BAD_SEARCHES = ["NaN", "1e999", "-Infinity", "isnull=1", "x__isnull=1", "a=1e999", "9" * 40]


@pytest.mark.parametrize("status", list(LISTINGS))
def test_malformed_list_parameters_never_answer_500(admin_client, jobs, status):
    admin_client.raise_request_exception = False
    base = url("job-list", status)
    queries = [f"page_after={c}" for c in BAD_CURSORS] + [f"page_before={c}" for c in BAD_CURSORS]
    queries += [f"after={c}" for c in BAD_CURSORS] + [f"before={c}" for c in BAD_CURSORS]
    queries += [f"args={s}" for s in BAD_SEARCHES]
    queries += ["queue=a%00b", "task=%00", "priority=99999999999999999999", "period=zz"]
    for query in queries:
        response = admin_client.get(f"{base}?{query}")
        assert response.status_code in (200, 400), (query, response.status_code)


def test_malformed_paths_and_ids_never_answer_500(admin_client, jobs):
    admin_client.raise_request_exception = False
    gets = [
        "/jobs/queues/a%00b/",
        "/jobs/recurring/a%00b/",
        "/jobs/" + "9" * 40 + "/",
        "/jobs/audit/?page_after=" + cursor([None, None]),
        "/jobs/audit/?page_before=" + cursor(["x", 1]),
    ]
    for path in gets:
        assert admin_client.get(path).status_code < 500, path
    for ids in (["²"], ["9" * 40], ["-1"], ["1e3"], ["\x00"]):
        response = admin_client.post(url("jobs-retry", "failed"), {"scope": "selected", "ids": ids})
        assert response.status_code < 500, ids
    assert admin_client.post("/jobs/actions/queue/pause/a%00b/").status_code < 500
    assert Job.objects.filter(failed_execution__isnull=False).count() == 1


# Defect 4: a bulk action that fails part-way is audited with what it did.


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


# Defect 5: keys ending like an action still reach their detail page.


def test_detail_pages_whose_key_ends_like_an_action(admin_client, db):
    for key in ("nightly/run", "a/enable", "b/disable"):
        RecurringTask.objects.create(
            key=key, schedule="0 * * * *", task_path="tests.tasks.dashboard.record", static=False
        )
        response = admin_client.get(url("recurring-detail", key))
        assert response.status_code == 200 and key in response.content.decode()
    for name in ("mail/pause", "mail/resume"):
        Pause.objects.create(queue_name=name)
        response = admin_client.get(url("queue-detail", name))
        assert response.status_code == 200 and name in response.content.decode()
    assert RecurringTask.objects.get(key="nightly/run").enabled
    admin_client.post(url("queue-pause", "mail"))
    assert set(Pause.objects.values_list("queue_name", flat=True)) == {
        "mail",
        "mail/pause",
        "mail/resume",
    }


# Defect 6: missing django-htmx is a check error, and pages do not crash.

WITHOUT_HTMX = [m for m in __import__("tests.settings").settings.MIDDLEWARE if "htmx" not in m]


def test_pages_render_without_the_htmx_middleware(admin_client, jobs):
    with override_settings(MIDDLEWARE=WITHOUT_HTMX):
        for page in ("overview", "queue-list", "process-list", "recurring-list", "audit-log"):
            assert admin_client.get(url(page)).status_code == 200, page
        assert admin_client.get(url("job-list", "failed")).status_code == 200
        assert admin_client.get(url("job-detail", jobs.failed.pk)).status_code == 200
        assert admin_client.get(url("job-detail", 987654)).status_code == 404


def _dashboard_messages() -> dict[str, str]:
    found = checks.run_checks(include_deployment_checks=False)
    messages: dict[str, str] = {}
    for m in found:
        if m.id and m.id.startswith("steady_queue_dashboard."):
            messages[m.id] = messages.get(m.id, "") + m.msg
    return messages


def test_system_checks_name_what_the_dashboard_needs():
    assert _dashboard_messages() == {}
    with override_settings(MIDDLEWARE=WITHOUT_HTMX):
        assert "steady_queue_dashboard.E002" in _dashboard_messages()
    from django.conf import settings

    apps = [app for app in settings.INSTALLED_APPS if app not in ("django_htmx", "django_filters")]
    with override_settings(INSTALLED_APPS=apps):
        found = _dashboard_messages()
    assert {"steady_queue_dashboard.E001"} <= set(found)
    assert "django_htmx" in found["steady_queue_dashboard.E001"]
    assert "django_filters" in found["steady_queue_dashboard.E001"]


# Defect 7: discarding one job confirms first; the audit keeps what it acted on.


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


# Build 3: filters people can use.


def test_task_and_error_filters_match_short_names(admin_client, jobs):
    html = admin_client.get(url("job-list", "failed") + "?task=fail").content.decode()
    assert f"job-row-{jobs.failed.pk}" in html
    html = admin_client.get(url("job-list", "finished") + "?task=record").content.decode()
    assert f"job-row-{jobs.finished.pk}" in html
    for error in ("RuntimeError", "runtime", "it broke"):
        html = admin_client.get(url("job-list", "failed") + f"?error={error}").content.decode()
        assert f"job-row-{jobs.failed.pk}" in html, error
    html = admin_client.get(url("job-list", "failed") + "?error=KeyError").content.decode()
    assert f"job-row-{jobs.failed.pk}" not in html


def test_compared_times_show_the_exact_time_beside_the_relative_one(admin_client, jobs):
    html = admin_client.get(url("job-list", "failed")).content.decode()
    exact = timezone.localtime(jobs.failed.failed_execution.created_at)
    assert f'<span class="exact-time">{exact:%Y-%m-%d %H:%M:%S}</span>' in html


def test_the_empty_state_says_whether_filters_are_active(admin_client, jobs):
    html = admin_client.get(url("job-list", "failed") + "?queue=nowhere").content.decode()
    assert "No failed job matches these filters:" in html and "Queue=nowhere" in html
    assert "Clear the filters" in html
    html = admin_client.get(url("job-list", "scheduled") + "?queue=nowhere").content.decode()
    assert "No scheduled job matches these filters" in html
    Job.objects.filter(pk=jobs.scheduled.pk).delete()
    html = admin_client.get(url("job-list", "scheduled")).content.decode()
    assert "No job is scheduled for later." in html and "No filter is applied" in html


def test_a_next_that_is_not_a_path_falls_back_instead_of_500(admin_client, jobs):
    admin_client.raise_request_exception = False
    for target in ("0", "overview", "javascript:alert(1)", "//evil.example/"):
        response = admin_client.post(url("job-retry", jobs.failed.pk), {"next": target})
        assert response.status_code == 302 and response.url == url("job-detail", jobs.failed.pk)
