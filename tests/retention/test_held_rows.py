"""A row someone holds is left for the next pass, never waited for; settings.py may
import the rules before Django's app registry is ready."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction

import steady_queue
from steady_queue.models import FailedExecution, Job
from steady_queue.retention import Retention
from steady_queue.retention.pruning import prune

from .helpers import alive, failed, finished

DAY = timedelta(days=1)


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite locks the whole database")
@pytest.mark.django_db(transaction=True)
def test_a_failed_job_whose_row_a_retry_holds_is_skipped_without_waiting(monkeypatch):
    monkeypatch.setattr(steady_queue, "retention_rules", [Retention(state="failed", keep=DAY)])
    held, free = failed(2 * DAY), failed(2 * DAY)
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:  # what Job.retry() does first: lock the failed row
        try:
            with transaction.atomic():
                FailedExecution.objects.filter(job_id=held).locked().exists()
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    try:
        started = time.monotonic()
        [removed] = prune(pause=0)
        took = time.monotonic() - started
    finally:
        release.set()
        holder.join(10)

    assert removed.removed == 1 and alive(held, free) == {held}
    assert took < 5  # it did not wait for the holder (which waits up to 30 s)
    [again] = prune(pause=0)  # the next pass takes it
    assert again.removed == 1 and alive(held) == set()


@pytest.mark.django_db
def test_a_finished_job_of_a_task_rule_is_left_to_that_rule(monkeypatch):
    monkeypatch.setattr(
        steady_queue,
        "retention_rules",
        [Retention(task="tests.tasks.noop", state="succeeded", keep=None)],
    )
    kept = finished(400 * DAY)
    prune(pause=0)
    assert Job.objects.filter(pk=kept).exists()


def test_settings_can_import_the_rules_before_the_app_registry_is_ready():
    code = (
        "import sys; from datetime import timedelta\n"
        "from steady_queue.retention import Retention\n"
        "rule = Retention(state='failed', keep=timedelta(days=1))\n"
        "assert not any(name.startswith('steady_queue.models') for name in sys.modules)\n"
        "print(rule.task)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
