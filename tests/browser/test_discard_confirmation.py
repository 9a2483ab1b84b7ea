"""Discarding in a real browser asks first and acts on exactly what it showed: "all matching"
on a filtered page, one job, the ticked rows, with or without JavaScript (issue 10)."""

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


def test_discard_selected_lists_the_three_asks_and_go_back_keeps_them(open_dashboard):
    """Issue 25, 8: three rows ticked, "Discard selected" lists them; Go back changes
    nothing and keeps them ticked; the second time, Confirm removes exactly those three."""
    results = [tasks.fail.enqueue(f"error {n}") for n in range(5)]
    run_ready_jobs()
    ids = sorted(int(result.id) for result in results)
    chosen, others = ids[:3], ids[3:]
    page = open_dashboard("/jobs/failed/")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(5)
    for pk in chosen:
        page.locator(f"#job-row-{pk} input[name=ids]").check()

    page.get_by_role("button", name="Discard selected").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text("Discard 3 jobs?")
    for pk in chosen:
        expect(confirm.get_by_role("link", name=f"#{pk}", exact=True)).to_be_visible()
    for pk in others:
        expect(confirm.get_by_role("link", name=f"#{pk}", exact=True)).to_have_count(0)

    confirm.get_by_role("link", name="Go back, change nothing").click()
    expect(page.locator(".confirm")).to_have_count(0)
    for pk in chosen:
        expect(page.locator(f"#job-row-{pk} input[name=ids]")).to_be_checked()
    for pk in others:
        expect(page.locator(f"#job-row-{pk} input[name=ids]")).not_to_be_checked()
    assert sorted(Job.objects.values_list("pk", flat=True)) == ids

    page.get_by_role("button", name="Discard selected").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text("Discard 3 jobs?")
    confirm.get_by_role("button", name="Discard 3 jobs").click()
    expect(page.locator("#sq-messages")).to_contain_text("3 jobs were discarded.")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(2)
    assert sorted(Job.objects.values_list("pk", flat=True)) == others


def test_discard_selected_without_javascript_asks_on_a_page_of_its_own(browser, open_dashboard):
    """Plain form posts: the question is a page; Go back returns to the list unchanged."""
    results = [tasks.fail.enqueue(f"error {n}") for n in range(3)]
    run_ready_jobs()
    ids = sorted(int(result.id) for result in results)
    logged_in = open_dashboard("/jobs/failed/")
    address = logged_in.url
    plain = browser.new_context(
        java_script_enabled=False, storage_state=logged_in.context.storage_state()
    )
    try:
        page = plain.new_page()
        for step in ("go back", "confirm"):
            page.goto(address)
            for pk in ids[:2]:
                page.locator(f"#job-row-{pk} input[name=ids]").check()
            page.get_by_role("button", name="Discard selected").click()
            confirm = page.locator(".confirm")
            expect(confirm).to_contain_text("Discard 2 jobs?")
            expect(page.locator("h1")).to_have_text("Confirm")
            if step == "go back":
                confirm.get_by_role("link", name="Go back, change nothing").click()
                page.wait_for_url(address)
                expect(page.locator("tr[id^=job-row-]")).to_have_count(3)
                assert sorted(Job.objects.values_list("pk", flat=True)) == ids
        confirm.get_by_role("button", name="Discard 2 jobs").click()
        page.wait_for_url(address)
        expect(page.locator("#sq-messages")).to_contain_text("2 jobs were discarded.")
        assert list(Job.objects.values_list("pk", flat=True)) == ids[2:]
    finally:
        plain.close()
