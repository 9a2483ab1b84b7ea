"""Pausing a task from the Tasks page in a real browser: it asks first (what would wait),
then pauses on the confirmation; the job page then offers to resume it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from steady_queue.models import Job, TaskPause
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD = "tests.tasks.dashboard.record"


def test_pause_a_task_from_the_tasks_page_then_see_it_paused_on_a_job_page(open_dashboard):
    tasks.record.enqueue(0)
    run_ready_jobs()  # a run this hour: the task is on the Tasks page
    waiting = [tasks.record.enqueue(n) for n in (1, 2)]
    page = open_dashboard("/jobs/tasks/")

    page.locator(f'#task-table button[data-task="{RECORD}"]').click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text(f"Pause task {RECORD}?")
    expect(confirm).to_contain_text("its 2 ready jobs")
    assert not TaskPause.objects.exists()
    confirm.get_by_role("button", name="Pause task").click()

    expect(page.locator("#sq-messages")).to_contain_text(f"Task {RECORD} is paused: 2 jobs wait")
    assert list(TaskPause.objects.values_list("task_path", flat=True)) == [RECORD]
    assert {Job.objects.get(pk=result.id).state for result in waiting} == {"paused"}

    page.goto(page.url.replace("/jobs/tasks/", f"/jobs/{waiting[0].id}/"))
    expect(page.locator("#job-detail")).to_contain_text("task paused")
    expect(page.locator(f'#job-detail button[data-task="{RECORD}"]')).to_have_text("Resume task")
