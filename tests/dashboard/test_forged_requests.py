"""Requests no page of the dashboard sent: crafted links, forged confirmations, malformed
parameters, paths and ids. They never widen an action, never skip its confirmation and
never answer 500 (issue 10, defects 2 and 3)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import Job
from steady_queue_dashboard.listings import LISTINGS

from .conftest import failed_ids
from .page_forms import confirm_form, cursor, hidden_fields, local, url

pytestmark = pytest.mark.django_db


# Crafted links cannot widen a bulk action or skip its confirmation.


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


# Malformed input answers 400 or the page, never 500.

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


def test_a_next_that_is_not_a_path_falls_back_instead_of_500(admin_client, jobs):
    admin_client.raise_request_exception = False
    for target in ("0", "overview", "javascript:alert(1)", "//evil.example/"):
        response = admin_client.post(url("job-retry", jobs.failed.pk), {"next": target})
        assert response.status_code == 302 and response.url == url("job-detail", jobs.failed.pk)
