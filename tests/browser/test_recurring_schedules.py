"""A schedule made from the console in a real browser: fill the form, see the schedule in
words and its next fire times, save it, and run it now."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from steady_queue.models import RecurringExecution, RecurringTask
from steady_queue_dashboard.models import AuditEntry

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_create_a_schedule_see_its_next_runs_and_run_it_now(open_dashboard):
    page = open_dashboard("/jobs/recurring/")
    page.get_by_role("link", name="New schedule").click()

    page.fill("#id_key", "nightly-report")
    page.fill("#id_task", "tests.tasks.dashboard.record")
    page.fill("#id_cron", "not a cron")
    page.fill("#id_args", '["report"]')
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#error-cron")).to_contain_text("Bad cron schedule")
    assert not RecurringTask.objects.exists()

    page.fill("#id_cron", "30 2 * * *")
    page.fill("#id_timezone", "America/New_York")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#schedule-words")).to_have_text("At 02:30")
    expect(page.locator("#next-runs li")).to_have_count(5)
    expect(page.locator("#next-runs li").first).to_contain_text("02:30")
    assert not RecurringTask.objects.exists()

    page.get_by_role("button", name="Save schedule").click()
    expect(page.locator("#sq-messages")).to_contain_text(
        "Recurring schedule nightly-report was created"
    )
    task = RecurringTask.objects.get(key="nightly-report")
    assert task.dynamic and task.timezone == "America/New_York"

    page.get_by_role("button", name="Run now").click()
    expect(page.locator("#sq-messages")).to_contain_text("was enqueued as job")
    run = RecurringExecution.objects.get(task_key="nightly-report")
    expect(page.locator(f"a[href='/jobs/{run.job_id}/']")).to_be_visible()
    assert list(AuditEntry.objects.order_by("pk").values_list("action", flat=True)) == [
        "schedule",
        "run now",
    ]
