"""What an operator does in the dashboard, in a real browser, against a real worker."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from steady_queue import arguments
from steady_queue.models import Job, Pause, Process, RecurringExecution, RecurringTask
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def wait_for(condition, timeout: float = 20.0, what: str = ""):
    """Poll ``condition`` until it is truthy; fail after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
    return value


def test_filter_failed_jobs_and_read_a_traceback(open_dashboard):
    tasks.fail.enqueue("card declined")
    tasks.fail.using(queue_name="low").enqueue("other failure")
    tasks.record.enqueue("fine")
    run_ready_jobs()
    page = open_dashboard("/jobs/failed/")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(2)

    page.fill("#id_queue", "low")
    page.press("#id_queue", "Enter")
    expect(page).to_have_url(re.compile(r"/jobs/failed/\?.*queue=low"))
    expect(page.locator("tr[id^=job-row-]")).to_have_count(1)

    page.fill("#id_queue", "")
    page.fill("#id_args", "card declined")
    page.press("#id_args", "Enter")
    expect(page).to_have_url(re.compile(r"args=card"))
    expect(page.locator("tr[id^=job-row-]")).to_have_count(1)
    expect(page.locator("tr[id^=job-row-]")).to_contain_text("card declined")
    page.locator("tr[id^=job-row-] td.id a").click()
    expect(page.locator("details.error pre")).to_contain_text("RuntimeError: card declined")
    expect(page.locator("details.error pre")).to_contain_text("Traceback (most recent call last)")


def test_retry_a_failed_job_and_see_it_succeed_after_a_worker_runs_it(
    open_dashboard, worker, tmp_path
):
    result = tasks.fail_once.enqueue(str(tmp_path / "marker"))
    wait_for(
        lambda: Job.objects.filter(pk=result.id, failed_execution__isnull=False).exists(),
        what="the first run to fail",
    )
    page = open_dashboard(f"/jobs/{result.id}/")
    expect(page.locator(".page-head .badge")).to_have_text("Failed")
    page.get_by_role("button", name="Retry").click()
    expect(page.locator("#sq-messages")).to_contain_text(f"Job {result.id} will run again.")
    expect(page.locator(".page-head .badge")).to_have_text("Finished", timeout=20_000)
    expect(page.locator(".attempts-table, table")).to_contain_text("succeeded")
    assert Job.objects.get(pk=result.id).return_value == "succeeded on retry"


def test_bulk_discard_the_jobs_matching_a_filter(open_dashboard):
    for n in range(3):
        tasks.fail.using(queue_name="low").enqueue(f"low {n}")
    kept = tasks.fail.enqueue("default")
    run_ready_jobs()
    page = open_dashboard("/jobs/failed/?queue=low")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(3)
    page.get_by_role("button", name="Discard all matching…").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text("Discard 3 jobs?")
    confirm.get_by_role("button", name="Discard 3 jobs").click()
    expect(page.locator("#sq-messages")).to_contain_text("3 jobs were discarded.")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(0)
    assert list(Job.objects.values_list("pk", flat=True)) == [int(kept.id)]


def test_cancel_the_throttled_jobs_of_one_rate_limit_window(open_dashboard):
    for _ in range(4):
        tasks.call_partner.enqueue(1)
    for _ in range(3):
        kept = tasks.call_partner.enqueue(2)
    page = open_dashboard("/jobs/rate-limits/")
    window = page.locator("#rate-limit-table tr", has_text="account-1")
    expect(window).to_contain_text("2 / 2")
    window.get_by_role("link", name="2").click()
    expect(page).to_have_url(re.compile(r"/jobs/throttled/\?task=.*&key=account-1"))
    expect(page.locator("tr[id^=job-row-]")).to_have_count(2)
    page.get_by_role("button", name="Cancel all matching…").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text("Cancel 2 jobs?")
    confirm.get_by_role("button", name="Cancel 2 jobs").click()
    expect(page.locator("#sq-messages")).to_contain_text("2 jobs were cancelled")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(0)
    assert Job.objects.with_execution().get(pk=kept.id).state == "throttled"


def test_bulk_retry_the_selected_rows(open_dashboard):
    results = [tasks.fail.enqueue(f"n{n}") for n in range(3)]
    run_ready_jobs()
    page = open_dashboard("/jobs/failed/")
    page.check(f"#job-row-{results[0].id} input[name=ids]")
    page.check(f"#job-row-{results[2].id} input[name=ids]")
    page.get_by_role("button", name="Retry selected").click()
    expect(page.locator("#sq-messages")).to_contain_text("2 jobs will run again.")
    expect(page.locator("tr[id^=job-row-]")).to_have_count(1)


def test_pause_and_resume_a_queue(open_dashboard):
    tasks.record.using(queue_name="low").enqueue(1)
    page = open_dashboard("/jobs/queues/")
    row = page.locator("table.queues tr", has_text="low")
    row.get_by_role("button", name="Pause").click()
    expect(row.locator(".badge")).to_have_text("paused")
    assert Pause.objects.filter(queue_name="low").exists()
    row.get_by_role("button", name="Resume").click()
    expect(row.locator(".badge")).to_have_text("running")
    assert not Pause.objects.exists()


def test_run_a_recurring_task_now(open_dashboard):
    RecurringTask.objects.create(
        key="nightly-report",
        schedule="0 3 * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize(["report"], {}),
        static=False,
    )
    page = open_dashboard("/jobs/recurring/")
    expect(page.locator("table.recurring")).to_contain_text("every day at 03:00")
    page.get_by_role("button", name="Run now").click()
    expect(page.locator("#sq-messages")).to_contain_text("was enqueued as job")
    run = RecurringExecution.objects.get(task_key="nightly-report")
    expect(page.locator(f"a[href='/jobs/{run.job_id}/']")).to_be_visible()


def test_watch_a_progress_bar_advance(open_dashboard, worker):
    result = tasks.crawl.enqueue(steps=12, pause=1.0)
    wait_for(lambda: Job.objects.get(pk=result.id).progress, what="the first progress report")
    page = open_dashboard(f"/jobs/{result.id}/")
    bar = page.locator("progress")
    first = int(bar.get_attribute("value"))
    expect(bar).not_to_have_attribute("value", str(first), timeout=15_000)
    assert int(bar.get_attribute("value")) > first
    expect(page.locator(".progress-text")).to_contain_text("/ 12")


def test_keyboard_users_reach_actions_with_tab_and_see_focus(open_dashboard):
    tasks.fail.enqueue("x")
    run_ready_jobs()
    page = open_dashboard("/jobs/failed/")
    # The filters come first in the tab order (the label and fairness key filters added
    # a dozen stops): the row's actions are reached after them.
    for _ in range(150):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.closest('td.actions') !== null"):
            break
    else:
        raise AssertionError("Tab never reached the Retry button")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"


def test_screenshots_of_the_main_screens(open_dashboard, screenshots):
    seed_a_busy_hour()
    failed = Job.objects.filter(failed_execution__isnull=False).order_by("-pk").first()
    pages = {
        "overview": "/jobs/",
        "failed": "/jobs/failed/",
        "job": f"/jobs/{failed.pk}/",
        "in-progress": "/jobs/running/",
        "queues": "/jobs/queues/",
        "processes": "/jobs/processes/",
        "recurring": "/jobs/recurring/",
    }
    for scheme in ("light", "dark"):
        page = open_dashboard("/jobs/", color_scheme=scheme)
        for name, path in pages.items():
            page.goto(page.url.split("/jobs/")[0] + path)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=screenshots / f"{name}-{scheme}.png", full_page=True)
    # Other tests (the phone-width ones) write to the same folder: count only these.
    taken = [screenshots / f"{name}-{scheme}.png" for scheme in ("light", "dark") for name in pages]
    assert all(path.exists() for path in taken)


def seed_a_busy_hour() -> None:
    """Jobs finished and failed over the last hour, some running and waiting: a real day."""
    from random import Random

    from steady_queue.models import FailedExecution, ReadyExecution
    from tests.dashboard.conftest import make_jobs

    pick, now = Random(7), timezone.now()
    make_jobs()
    errors = ["Card ending 4242 was declined", "Connection refused: api.example.com:443"]
    for n in range(24):
        tasks.fail.using(queue_name=["default", "low"][n % 2]).enqueue(errors[n % 2])
    for n in range(150):
        tasks.record.using(queue_name=["default", "low", "background"][n % 3]).enqueue(
            n, account_id=n % 40
        )
    run_ready_jobs()
    for job in Job.objects.filter(finished_at__isnull=False):
        minutes_ago = timedelta(minutes=60 * pick.random() ** 1.5)
        Job.objects.filter(pk=job.pk).update(finished_at=now - minutes_ago)
    for failure in FailedExecution.objects.all():
        minutes_ago = timedelta(minutes=pick.uniform(0, 60))
        FailedExecution.objects.filter(pk=failure.pk).update(created_at=now - minutes_ago)
    for n, queue in enumerate(["default", "low", "background", "default", "low"]):
        tasks.record.using(queue_name=queue).enqueue(n)
    for ready in ReadyExecution.objects.all():
        waited = timedelta(seconds=pick.uniform(1, 240))
        ReadyExecution.objects.filter(pk=ready.pk).update(created_at=now - waited)
    supervisor = Process.objects.create(
        kind="Supervisor", name="supervisor-a1", pid=4200, hostname="box"
    )
    Process.objects.filter(kind="Worker").update(
        supervisor=supervisor, metadata={"queues": "*", "threads": 3, "polling_interval": 0.1}
    )
    RecurringTask.objects.create(
        key="nightly-report",
        schedule="0 3 * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize(["report"], {"account_id": 7}),
        description="Builds yesterday's report",
        static=False,
    ).enqueue_now()
    RecurringTask.objects.create(
        key="sync-contacts",
        schedule="*/15 * * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize([], {}),
        static=False,
        enabled=False,
    )


def test_follow_a_failed_workflow_step_from_its_graph_and_retry_it(open_dashboard, screenshots):
    from steady_queue.workflows import Workflow
    from tests.tasks import groups

    wf = Workflow("nightly report")
    extract = wf.add(groups.step, args=(1,), name="extract")
    transforms = [
        wf.add(groups.explode if n == 2 else groups.step, args=(n,), after=[extract])
        for n in range(1, 4)
    ]
    load = wf.add(groups.step, after=transforms, name="load")
    wf.add(groups.step, after=[load], name="report")
    wf.add(groups.step, after=[extract], name="audit", run_if="finished")
    run = wf.enqueue()
    run_ready_jobs()

    page = open_dashboard(f"/jobs/workflows/{run.id}/")
    expect(page.locator(".workflow-failures")).to_contain_text("blocked: load, report")
    expect(page.locator("svg a.node.state-dependency-failed")).to_have_count(2)
    page.screenshot(path=screenshots / "workflow-light.png", full_page=True)
    page.locator("svg a.node.state-failed").click()
    expect(page.locator(".page-head .badge")).to_have_text("Failed")
    expect(page.locator(".step-downstream")).to_contain_text("load")
    page.get_by_role("button", name="Retry").click()
    expect(page.locator("#sq-messages")).to_contain_text("will run again")
    page.goto(page.url.split("/jobs/")[0] + f"/jobs/workflows/{run.id}/")
    expect(page.locator("svg a.node.state-waiting")).to_have_count(2)
    expect(page.locator(".workflow-failures")).to_have_count(0)
    dark = open_dashboard(f"/jobs/workflows/{run.id}/", color_scheme="dark")
    dark.screenshot(path=screenshots / "workflow-dark.png", full_page=True)
