"""The Archive in a real browser: search archived jobs by error and label, open one, restore
it as a new job after the confirmation, and land on the new job's page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from steady_queue.models import ArchivedJob, Job
from steady_queue_dashboard.models import AuditEntry
from tests.dashboard.test_archive import archived

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_the_archive_and_restore_a_job_as_a_new_one(open_dashboard, screenshots):
    declined = archived(
        "tests.tasks.add", [1, 2], labels=["tenant:acme"], error=("CardDeclined", "card declined")
    )
    archived("tests.tasks.add", [3, 4], labels=["tenant:other"], error=("TimeoutError", "slow"))
    page = open_dashboard("/jobs/")

    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Archive").click()
    expect(page.locator("#archive-table tbody tr")).to_have_count(2)
    page.fill("#id_error", "declined")
    page.locator("#id_error").press("Enter")
    expect(page.locator("#archive-table tbody tr")).to_have_count(1)
    expect(page).to_have_url(re.compile(r"/jobs/archive/\?.*error=declined"))
    page.locator(f"#archived-row-{declined.pk}").get_by_role("link", name="tenant:acme").click()
    expect(page.locator("#archive-table tbody tr")).to_have_count(1)
    page.screenshot(path=screenshots / "archive-search.png", full_page=True)

    page.get_by_role("link", name=f"#{declined.pk}").click()
    expect(page.locator("#archived-error")).to_contain_text("card declined")
    page.locator("#archive-restore").click()
    expect(page.locator("#restore-arguments")).to_contain_text("1")
    assert not Job.objects.exists()  # asked, not done
    page.screenshot(path=screenshots / "archive-restore.png", full_page=True)

    page.get_by_role("button", name="Restore as a new job").click()
    expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get()
    assert page.url.endswith(f"/jobs/{job.pk}/")
    expect(page.locator("#sq-messages")).to_contain_text(f"was restored as job {job.pk}")
    expect(page.locator("#job-detail")).to_contain_text("tests.tasks.add")
    assert ArchivedJob.objects.get(pk=declined.pk).restored_job_id == job.pk
    assert list(AuditEntry.objects.values_list("action", "username")) == [("restore", "root")]
