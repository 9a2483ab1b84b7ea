"""Job list filters: kept by pagination and by "all matching", matched by short task and
error names, and said to be active when nothing matches (issue 10, defect 1)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import Job
from steady_queue_dashboard import joblist
from steady_queue_dashboard.filters import JobFilter
from steady_queue_dashboard.listings import LISTINGS

from .conftest import failed_ids
from .page_forms import confirm_form, hidden_fields, local, url

pytestmark = pytest.mark.django_db


# Filter and pagination parameters never share names.


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


# Filters people can use.


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
