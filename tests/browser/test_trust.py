"""Issue 10 in a real browser: "all matching" acts on exactly what the filtered page shows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from steady_queue.models import FailedExecution, Job
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_filter_failed_by_date_then_discard_all_matching(open_dashboard):
    results = [tasks.fail.enqueue(f"error {n}") for n in range(4)]
    run_ready_jobs()
    old = int(results[0].id)
    FailedExecution.objects.filter(job_id=old).update(created_at=timezone.now() - timedelta(days=2))
    page = open_dashboard("/jobs/failed/")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(4)

    cutoff = timezone.localtime(timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    page.fill("#id_before", cutoff)
    page.press("#id_before", "Enter")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(1)
    expect(page.locator(f"#job-row-{old}")).to_be_visible()
    # fill() fires "change" and Enter a submit: two filter requests, the second replacing
    # the first. Wait until neither is in flight, or the late one re-renders the list and
    # takes away the confirmation opened below.
    expect(page.locator("form.filters.htmx-request")).to_have_count(0)

    page.get_by_role("button", name="Discard all matching…").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text("Discard 1 job?")
    confirm.get_by_role("button", name="Discard 1 job").click()
    expect(page.locator("#sq-messages")).to_contain_text("1 job was discarded.")
    assert sorted(Job.objects.values_list("pk", flat=True)) == sorted(
        int(result.id) for result in results[1:]
    )


def test_discarding_one_job_asks_first(open_dashboard):
    result = tasks.fail.enqueue("card declined")
    run_ready_jobs()
    page = open_dashboard(f"/jobs/{result.id}/")
    page.locator(".page-head").get_by_role("button", name="Discard").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text(f"Discard job #{result.id}?")
    expect(confirm).to_contain_text("tests.tasks.dashboard.fail")
    assert Job.objects.filter(pk=result.id).exists()
    confirm.get_by_role("button", name=f"Discard job #{result.id}").click()
    expect(page.locator("#sq-messages")).to_contain_text(f"Job {result.id} was discarded.")
    assert not Job.objects.filter(pk=result.id).exists()
