"""The overview tells the operator what is wrong, live; secrets never reach the page."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from random import Random
from typing import IO

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from steady_queue.models import FailedExecution, Job, Process, ReadyExecution
from steady_queue.testing import run_ready_jobs
from tests.browser.conftest import REPO
from tests.tasks import dashboard as tasks
from tests.tasks import masked as masked_tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DANGER = "#problems .problem.danger"


def start_queue(log: IO[str]) -> subprocess.Popen:
    """Start the real ``manage.py steady_queue`` (supervisor, worker, dispatcher)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.processes.settings",
        "SQ_PROCESS_DB_NAME": str(connection.settings_dict["NAME"]),
    }
    command = [sys.executable, str(REPO / "tests" / "manage.py"), "steady_queue"]
    command += ["--skip-checks", "--skip-recurring", "--config", "tests.processes.configs.FAST"]
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        process.wait(timeout=30)


def test_the_no_worker_banner_follows_the_real_workers(open_dashboard, tmp_path):
    for n in range(3):
        tasks.record.enqueue(n)
    page = open_dashboard("/jobs/")
    expect(page.locator(DANGER).first).to_contain_text("No Steady Queue process is running.")
    expect(page.locator("#problems")).to_contain_text(
        "No live worker: 3 jobs are waiting in default (3)."
    )

    log = (tmp_path / "queue.log").open("w")
    queue = start_queue(log)
    try:
        # The overview refreshes itself: the banner goes once the workers report in.
        expect(page.locator("#problems")).to_contain_text("All clear.", timeout=40_000)
        expect(page.locator(DANGER)).to_have_count(0)
        assert Job.objects.filter(finished_at__isnull=False).count() == 3

        stop(queue)  # a graceful stop deregisters every process
        tasks.record.enqueue("after the stop")
        expect(page.locator(DANGER).first).to_contain_text(
            "No Steady Queue process is running.", timeout=40_000
        )
        expect(page.locator("#problems")).to_contain_text(
            "No live worker: 1 job is waiting in default (1)."
        )

        queue = start_queue(log)
        expect(page.locator("#problems")).to_contain_text("All clear.", timeout=40_000)
    finally:
        stop(queue, signal.SIGKILL)
        log.close()
        print((tmp_path / "queue.log").read_text(errors="replace"))


SECRETS = ["hunter2-SECRET", "tok-XYZ-SECRET", "4111111111111111"]


def test_a_masked_argument_never_appears_in_the_html(open_dashboard):
    plain = tasks.record.enqueue(
        "visible-arg", password="hunter2-SECRET", api_token="tok-XYZ-SECRET"
    )
    card = masked_tasks.charge.enqueue("4111111111111111", 10)
    # Fails (unexpected keyword) and stays failed, secret and all.
    failed = tasks.fail.using(queue_name="low").enqueue(password="hunter2-SECRET")
    run_ready_jobs(queues=["low"])
    page = open_dashboard("/jobs/ready/")
    paths = [
        "/jobs/ready/",
        f"/jobs/{plain.id}/",
        f"/jobs/{card.id}/",
        "/jobs/queues/default/",
    ]
    base = page.url.split("/jobs/")[0]
    for path in paths:
        page.goto(base + path)
        page.wait_for_load_state("networkidle")
        html = page.content()
        assert not [secret for secret in SECRETS if secret in html], path
        assert "[masked]" in html
    # Searching a masked value finds nothing; the search itself works.
    for search, rows in [
        ("password=hunter2-SECRET", 0),
        ("4111111111111111", 0),
        ("visible-arg", 1),
    ]:
        page.goto(base + "/jobs/ready/")
        page.fill("#id_args", search)
        page.press("#id_args", "Enter")
        page.wait_for_load_state("networkidle")
        expect(page.locator("tr[id^=job-row-]")).to_have_count(rows)
    # Acting on a job with a secret: the audit log shows its arguments masked.
    page.goto(base + f"/jobs/{failed.id}/")
    page.get_by_role("button", name="Retry").click()
    expect(page.locator("#sq-messages")).to_contain_text("will run again")
    page.goto(base + "/jobs/audit/")
    html = page.content()
    assert not [secret for secret in SECRETS if secret in html]


def live_processes(queues="*") -> None:
    supervisor = Process.objects.create(kind="Supervisor", name="supervisor-a1", pid=4200)
    for n, name in enumerate(["worker-1", "worker-2"]):
        Process.objects.create(
            kind="Worker",
            name=name,
            pid=4201 + n,
            hostname="box",
            supervisor=supervisor,
            metadata={"queues": [queues], "threads": 3},
        )
    Process.objects.create(
        kind="Dispatcher", name="dispatcher-1", pid=4203, hostname="box", supervisor=supervisor
    )


def busy_hour(failures_recent: int = 0) -> None:
    """An hour of finished jobs and a few failures spread over it, some jobs waiting."""
    pick, now = Random(7), timezone.now()
    errors = ["Card ending 4242 was declined", "Connection refused: api.example.com:443"]
    for n in range(6):
        tasks.fail.using(queue_name=["default", "low"][n % 2]).enqueue(errors[n % 2])
    for n in range(120):
        tasks.record.using(queue_name=["default", "low", "background"][n % 3]).enqueue(n)
    run_ready_jobs()
    for job in Job.objects.filter(finished_at__isnull=False):
        minutes_ago = timedelta(minutes=60 * pick.random() ** 1.5)
        Job.objects.filter(pk=job.pk).update(finished_at=now - minutes_ago)
    for failure in FailedExecution.objects.all():
        minutes_ago = timedelta(minutes=pick.uniform(15, 60))
        FailedExecution.objects.filter(pk=failure.pk).update(created_at=now - minutes_ago)
    spike = [
        "Payment gateway timeout after 30s for order 'A-1001'",
        "Card ending 1881 was declined",
        "Connection refused: api.example.com:443",
    ]
    for n in range(failures_recent):
        tasks.fail.using(queue_name="default").enqueue(
            spike[0 if n % 5 else 1 + n % 2].replace("1001", str(1001 + n))
        )
    run_ready_jobs()
    for failure in FailedExecution.objects.filter(created_at__gte=now):
        seconds_ago = timedelta(seconds=pick.uniform(5, 420))
        FailedExecution.objects.filter(pk=failure.pk).update(created_at=now - seconds_ago)
    for n, queue in enumerate(["default", "low", "background", "default", "low"]):
        tasks.record.using(queue_name=queue).enqueue(n)
    for ready in ReadyExecution.objects.all():
        waited = timedelta(seconds=pick.uniform(1, 90))
        ReadyExecution.objects.filter(pk=ready.pk).update(created_at=now - waited)


def test_screenshots_of_what_the_overview_says_first(open_dashboard, screenshots):
    """What an operator sees first (no scrolling): healthy, workers down, a failure spike."""
    busy_hour()
    live_processes()
    page = open_dashboard("/jobs/")
    page.wait_for_load_state("networkidle")
    expect(page.locator("#problems")).to_contain_text("All clear.")
    page.screenshot(path=screenshots / "overview-healthy.png")

    Process.objects.all().delete()
    for n in range(40):
        tasks.record.using(queue_name=["default", "low"][n % 2]).enqueue(n)
    ReadyExecution.objects.update(created_at=timezone.now() - timedelta(minutes=12))
    page.reload()
    expect(page.locator(DANGER).first).to_contain_text("No Steady Queue process is running.")
    page.screenshot(path=screenshots / "overview-workers-down.png")

    ReadyExecution.objects.all().delete()
    live_processes()
    busy_hour(failures_recent=35)
    ReadyExecution.objects.all().delete()
    page.reload()
    expect(page.locator(DANGER).first).to_contain_text("Failure spike")
    page.screenshot(path=screenshots / "overview-failure-spike.png")
    for name in ["healthy", "workers-down", "failure-spike"]:
        assert (screenshots / f"overview-{name}.png").stat().st_size > 10_000
