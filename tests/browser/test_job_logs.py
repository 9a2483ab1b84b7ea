"""Reading a running job's log, live, and its stack, in a real browser against a real worker."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from steady_queue.models import ClaimedExecution, Job, JobLogLine
from tests.processes.conftest import wait_until
from tests.tasks import logging_tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_read_a_running_jobs_log_as_it_grows_and_its_live_stack(open_dashboard, worker, tmp_path):
    step, release = tmp_path / "step", tmp_path / "release"
    result = logging_tasks.logs_in_steps.enqueue(str(step), str(release))
    wait_until(lambda: JobLogLine.objects.filter(job_id=result.id).exists(), what="a first line")

    page = open_dashboard(f"/jobs/{result.id}/")
    lines = page.locator("#run-log .run-log-lines li")
    expect(lines).to_have_count(1)
    expect(lines.first).to_contain_text("waiting for the step")
    expect(lines.first).to_contain_text("INFO")

    step.touch()  # the task logs again: the page shows it without a reload
    expect(lines).to_have_count(2, timeout=10_000)
    expect(lines.nth(1)).to_contain_text("the step was taken")
    expect(lines.nth(1)).to_have_class("level-warning")

    page.get_by_role("button", name="Show the live stack").click()
    frames = page.locator("#job-stack .stack-frames li")
    expect(frames.first).to_contain_text("logs_in_steps", timeout=10_000)
    expect(page.locator("#job-stack .stack-note")).to_contain_text("In C code")
    expect(frames.last).to_contain_text("time.sleep(0.05)")

    release.touch()
    wait_until(lambda: Job.objects.get(pk=result.id).finished_at, what="the job to finish")
    assert not ClaimedExecution.objects.filter(job_id=result.id).exists()
    # Once the job ended, the log stops polling and keeps its lines.
    expect(page.locator("#run-log")).not_to_have_attribute("hx-trigger", "every 2s", timeout=10_000)
    expect(lines).to_have_count(2)
