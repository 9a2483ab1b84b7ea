"""``manage.py steady_queue_queues``: list, pause (dry run unless --yes) and resume, audited."""

from __future__ import annotations

import getpass

import pytest
from django.core.management.base import CommandError

from steady_queue.models import Pause
from steady_queue_dashboard.models import AuditEntry
from tests import tasks

from .conftest import run_command

pytestmark = pytest.mark.django_db
ACTOR = f"os:{getpass.getuser()}"


def queues(*args: str):
    return run_command("steady_queue_queues", *args)


def test_list_shows_queues_with_jobs_and_configured_ones():
    tasks.noop.using(queue_name="background").enqueue()
    tasks.noop.using(queue_name="background").enqueue()
    Pause.objects.create(queue_name="low")
    lines = queues("list").lines
    assert lines[0].split() == ["QUEUE", "READY", "LATENCY", "STATE"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["background"][0] == "2" and rows["background"][2] == "running"
    assert rows["low"] == ["0", "-", "paused"]
    assert rows["real_time"] == ["0", "-", "running"]  # configured in TASKS, idle


def test_pause_is_a_dry_run_until_yes():
    result = queues("pause", "background")
    assert result.lines[0].startswith("Dry run: would pause queue background (0 ready jobs)")
    assert not Pause.objects.exists()
    assert not AuditEntry.objects.exists()
    result = queues("pause", "background", "--yes")
    assert result.lines == [
        "Queue background is paused: workers take no more jobs from it.",
        f"Recorded in the audit log as {ACTOR}.",
    ]
    assert list(Pause.objects.values_list("queue_name", flat=True)) == ["background"]
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target) == (ACTOR, "pause", "queue background")


def test_resume_acts_at_once_and_is_audited():
    Pause.objects.create(queue_name="background")
    assert queues("resume", "background").lines[0] == "Queue background is running again."
    assert not Pause.objects.exists()
    assert AuditEntry.objects.get().action == "resume"
    assert queues("resume", "background").lines == ["Queue background is not paused."]
    assert AuditEntry.objects.count() == 1


def test_an_unknown_queue_is_refused():
    with pytest.raises(CommandError, match="No queue named 'nope'"):
        queues("pause", "nope", "--yes")
    assert not Pause.objects.exists()


def test_pause_and_resume_need_a_name():
    with pytest.raises(CommandError, match="pause needs the name of a queue"):
        queues("pause")
