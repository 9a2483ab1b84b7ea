"""A broken recurring task under the real ``manage.py steady_queue``: the others run."""

from __future__ import annotations

import pytest

from steady_queue.models import Job, Process, RecurringExecution
from tests.processes.conftest import wait_until

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_the_scheduler_keeps_enqueueing_the_others_when_one_task_raises(start_supervisor):
    supervisor = start_supervisor(
        "FAST",
        "--only-dispatchers",
        recurring=True,
        children=2,
        DJANGO_SETTINGS_MODULE="tests.processes.broken_recurring_settings",
    )
    healthy = RecurringExecution.objects.filter(task_key="trust healthy")
    wait_until(lambda: healthy.count() >= 3, timeout=30, what="three runs of the healthy task")
    [scheduler] = Process.objects.filter(kind=Process.Kind.SCHEDULER)
    wait_until(lambda: healthy.count() >= 5, timeout=30, what="two more runs")
    assert Process.objects.filter(kind=Process.Kind.SCHEDULER).get().pid == scheduler.pid
    assert not RecurringExecution.objects.filter(task_key="trust broken").exists()
    assert Job.objects.count() == healthy.count()
    output = supervisor.output()
    assert "Could not enqueue recurring task trust broken" in output
    assert "TypeError: cannot compute a concurrency key" in output
