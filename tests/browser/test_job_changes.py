"""Changing jobs from the console in a real browser: fix a failed job's arguments, retry it
and see it succeed; enqueue a new job from the form and find it in the list."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests import tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_edit_a_failed_jobs_arguments_retry_it_and_see_it_succeed(open_dashboard, screenshots):
    job_id = int(tasks.add.enqueue(1, "two").id)  # 1 + "two": a TypeError
    run_ready_jobs()
    assert Job.objects.with_execution().get(pk=job_id).state == "failed"
    page = open_dashboard(f"/jobs/{job_id}/")

    page.locator("#job-edit").click()
    expect(page.locator("#id_args")).to_have_value('[1, "two"]')
    page.screenshot(path=screenshots / "job-edit-form.png", full_page=True)
    page.fill("#id_args", "[1, 2")
    page.get_by_role("button", name="Review changes").click()
    expect(page.locator("#error-args")).to_contain_text("Not valid JSON")

    page.fill("#id_args", "[1, 2]")
    page.get_by_role("button", name="Review changes").click()
    expect(page.locator("#change-diff")).to_contain_text('[1, "two"]')
    expect(page.locator("#change-diff")).to_contain_text("[1, 2]")
    assert Job.objects.get(pk=job_id).arguments["args"] == [1, "two"]  # not yet
    page.screenshot(path=screenshots / "job-edit-diff.png", full_page=True)

    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#sq-messages")).to_contain_text(f"Job {job_id} was changed.")
    assert Job.objects.get(pk=job_id).arguments["args"] == [1, 2]

    page.locator("#job-detail .actions").get_by_role("button", name="Retry").click()
    expect(page.locator("#sq-messages")).to_contain_text(f"Job {job_id} will run again")
    run_ready_jobs()
    page.reload()
    expect(page.locator("#job-detail .badge").first).to_have_text("Finished")
    assert Job.objects.get(pk=job_id).return_value == 3
    actions = list(AuditEntry.objects.order_by("pk").values_list("action", "username"))
    assert actions == [("edit", "root"), ("retry", "root")]


def test_retry_with_changes_in_one_step(open_dashboard):
    job_id = int(tasks.add.enqueue(1, "two").id)
    run_ready_jobs()
    page = open_dashboard(f"/jobs/{job_id}/")

    page.locator("#job-retry-changed").click()
    page.fill("#id_args", "[20, 22]")
    page.get_by_role("button", name="Review changes").click()
    page.get_by_role("button", name="Retry job").click()
    expect(page.locator("#sq-messages")).to_contain_text("will run again with the new arguments")

    run_ready_jobs()
    finished = Job.objects.get(pk=job_id)
    assert finished.finished_at is not None and finished.return_value == 42


def test_create_a_new_job_from_the_form_and_see_it_in_the_list(open_dashboard, settings):
    settings.STEADY_QUEUE_DASHBOARD = {"TASKS": ["tests.tasks.greet"]}
    page = open_dashboard("/jobs/ready/")

    page.locator("#new-job").click()
    page.select_option("#id_pick_task", "tests.tasks.greet")
    page.get_by_role("button", name="Choose task").click()
    expect(page.locator("#id_param_times")).to_be_visible()
    page.fill("#id_param_name", "Ada")
    page.fill("#id_param_times", "2")
    page.fill("#id_priority", "5")
    page.get_by_role("button", name="Review changes").click()
    expect(page.locator("#change-diff")).to_contain_text('{"name": "Ada", "times": 2}')
    assert not Job.objects.exists()

    page.get_by_role("button", name="Enqueue job").click()
    job = Job.objects.get()
    expect(page.locator("#sq-messages")).to_contain_text(f"Job {job.pk} of tests.tasks.greet")
    assert (job.arguments["kwargs"], job.priority) == ({"name": "Ada", "times": 2}, 5)

    page.goto(page.url.split("/jobs/")[0] + "/jobs/ready/")
    expect(page.locator(f"#job-row-{job.pk}")).to_contain_text("tests.tasks.greet")
    assert AuditEntry.objects.get().action == "enqueue"
