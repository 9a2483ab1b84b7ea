"""``steady_queue_jobs --status cancelled``: cancelled jobs apart from failed ones."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

from steady_queue.models import Job
from steady_queue.ops.selection import JobSelection
from steady_queue.testing import run_ready_jobs
from tests import tasks

from .conftest import run_command

pytestmark = pytest.mark.django_db


def jobs(*args: str):
    return run_command("steady_queue_jobs", *args)


@pytest.fixture
def outcomes() -> dict[str, list[int]]:
    """Two jobs failed by their task, three cancelled before they ran."""
    failed = [int(tasks.explode.enqueue().id) for _ in range(2)]
    run_ready_jobs()
    cancelled = [int(tasks.noop.enqueue().id) for _ in range(3)]
    Job.objects.filter(pk__in=cancelled).cancel_all()
    return {"failed": failed, "cancelled": cancelled}


def selected(status: str) -> list[int]:
    return sorted(JobSelection(status=status).jobs().values_list("pk", flat=True))


def test_failed_leaves_cancelled_jobs_out_and_cancelled_selects_them(outcomes):
    assert selected("failed") == outcomes["failed"]
    assert selected("cancelled") == outcomes["cancelled"]


def test_list_counts_cancelled_jobs_and_shows_them_as_cancelled(outcomes):
    result = jobs("list", "--status", "cancelled")
    assert result.lines[0] == "3 cancelled jobs match."
    assert all(line.split()[1] == "cancelled" for line in result.lines[1:4])
    assert jobs("list", "--status", "failed").lines[0] == "2 failed jobs match."


def test_retry_means_failed_jobs_and_cancelled_ones_can_be_retried_on_request(outcomes):
    assert jobs("retry").lines[0] == "Dry run: would retry 2 failed jobs."
    jobs("retry", "--status", "cancelled", "--yes")
    states = dict(Job.objects.with_execution().values_list("pk", "failed_execution"))
    assert all(states[pk] is None for pk in outcomes["cancelled"])
    assert all(states[pk] is not None for pk in outcomes["failed"])


def test_discard_cancelled_deletes_only_them(outcomes):
    jobs("discard", "--status", "cancelled", "--yes")
    assert sorted(Job.objects.values_list("pk", flat=True)) == outcomes["failed"]


def test_an_unknown_status_names_cancelled_among_the_choices(db):
    with pytest.raises(CommandError, match="'cancelled'"):
        jobs("list", "--status", "canceled")
