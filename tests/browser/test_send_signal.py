"""Waking a durable job from the console in a real browser: find it on the Waits page, send
its signal from its page (a bad payload first), confirm, and see it finish."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from steady_queue.models import Job, JobSignal
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import durable_console

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_find_a_waiting_job_send_its_signal_and_see_it_finish(open_dashboard, screenshots):
    job_id = int(durable_console.onboard.enqueue(3).id)
    run_ready_jobs()
    assert Job.objects.with_execution().get(pk=job_id).state == "waiting"
    page = open_dashboard("/jobs/")

    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Waits").click()
    row = page.locator(f"#wait-row-{job_id}")
    expect(row).to_contain_text("confirmed")
    row.get_by_role("link", name=f"#{job_id}").click()
    expect(page.locator("#durable-wait")).to_contain_text("Waiting for signal confirmed until")
    expect(page.locator("#durable-steps")).to_contain_text("create-account")
    expect(page.locator("#durable-steps")).not_to_contain_text("hunter2")

    expect(page.locator("#id_signal_name")).to_have_value("confirmed")
    page.fill("#id_signal_payload", '{"by": "console"')
    page.get_by_role("button", name="Review signal").click()
    expect(page.locator("#error-payload")).to_contain_text("not valid JSON")
    assert not JobSignal.objects.exists()

    page.fill("#id_payload", '{"by": "console"}')
    page.get_by_role("button", name="Review signal").click()
    expect(page.locator("#signal-review")).to_contain_text('"by": "console"')
    page.screenshot(path=screenshots / "send-signal-review.png", full_page=True)
    assert not JobSignal.objects.exists()  # not before the confirmation

    page.get_by_role("button", name="Send signal").click()
    expect(page.locator("#sq-messages")).to_contain_text(f"was sent to job {job_id}")
    assert list(AuditEntry.objects.values_list("action", "username")) == [("signal", "root")]

    run_ready_jobs()
    page.reload()
    expect(page.locator("#job-detail .badge").first).to_have_text("Finished")
    expect(page.locator("#durable-steps")).to_contain_text("activate")
