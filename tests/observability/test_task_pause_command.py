"""``manage.py steady_queue_queues pause-task / resume-task``: a dry run until --yes,
audited, bad paths refused with nothing written; and the ``steady_queue_task_paused``
metric."""

from __future__ import annotations

import getpass

import pytest
from django.core.management.base import CommandError

from steady_queue.models import Job, TaskPause
from steady_queue.pauses import pause_task
from steady_queue_dashboard.models import AuditEntry
from tests import tasks

from .conftest import run_command
from .metrics import TOKEN, sample, scrape

pytestmark = pytest.mark.django_db
ACTOR = f"os:{getpass.getuser()}"
ECHO = "tests.tasks.echo"


def queues(*args: str):
    return run_command("steady_queue_queues", *args)


def test_pause_task_is_a_dry_run_until_yes_then_audited():
    tasks.echo.enqueue(1)
    tasks.echo.using(queue_name="low").enqueue(2)

    dry = queues("pause-task", ECHO)

    assert dry.lines[0] == (
        f"Dry run: would pause task {ECHO} (2 ready jobs): workers would start none of "
        "its jobs, on any queue."
    )
    assert not TaskPause.objects.exists() and not AuditEntry.objects.exists()
    done = queues("pause-task", ECHO, "--yes")
    assert done.lines == [
        f"Task {ECHO} is paused: 2 jobs wait; workers start none of its jobs until it is resumed.",
        f"Recorded in the audit log as {ACTOR}.",
    ]
    assert {job.state for job in Job.objects.all()} == {"paused"}
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target) == (ACTOR, "pause", f"task {ECHO}")
    assert queues("pause-task", ECHO, "--yes").lines == [f"Task {ECHO} is already paused."]
    assert f"Task {ECHO} is paused." in queues("list").lines


def test_resume_task_acts_at_once_and_is_audited():
    tasks.echo.enqueue(1)
    pause_task(ECHO)

    assert queues("resume-task", ECHO).lines[0] == f"Task {ECHO} is running again: 1 job ready."

    assert not TaskPause.objects.exists()
    assert Job.objects.get().state == "ready"
    assert AuditEntry.objects.get().action == "resume"
    assert queues("resume-task", ECHO).lines == [f"Task {ECHO} is not paused."]


@pytest.mark.parametrize("path", ["tests.tasks.nothing", "echo", "tests.tasks.CALLS", "a.b\x00"])
def test_a_path_that_is_no_task_is_refused_and_nothing_is_written(path):
    for action in ("pause-task", "resume-task"):
        with pytest.raises(CommandError):
            queues(action, path, "--yes")
    with pytest.raises(CommandError, match="needs the dotted path of a task"):
        queues("pause-task")
    assert not TaskPause.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.urls("tests.observability.urls")
def test_each_paused_task_is_a_metric(settings):
    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN
    assert not [key for key in scrape() if key[0] == "steady_queue_task_paused"]
    pause_task(ECHO)
    pause_task(tasks.add)
    samples = scrape()
    assert sample(samples, "steady_queue_task_paused", task=ECHO) == 1
    assert sample(samples, "steady_queue_task_paused", task="tests.tasks.add") == 1


def test_steady_queue_jobs_lists_and_cancels_paused_jobs():
    ids = [tasks.echo.enqueue(n).id for n in range(2)]
    pause_task(ECHO)

    assert run_command("steady_queue_jobs", "list", "--status", "paused").lines[0] == (
        "2 paused jobs match."
    )
    run_command("steady_queue_jobs", "cancel", "--status", "paused", "--yes")

    assert not Job.objects.filter(pk__in=ids, paused_execution__isnull=False).exists()
    assert Job.objects.filter(pk__in=ids, failed_execution__isnull=False).count() == 2
