"""``manage.py steady_queue_jobs release``: free slots only, unless --force; dry run until --yes."""

from __future__ import annotations

import getpass

import pytest
from django.core.management.base import CommandError

from steady_queue.models import Job, Semaphore
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import features as tasks

from .conftest import run_command

pytestmark = pytest.mark.django_db
ACTOR = f"os:{getpass.getuser()}"


def jobs(*args: str):
    return run_command("steady_queue_jobs", *args)


def states(results) -> list[str]:
    found = Job.objects.with_execution().in_bulk([int(r.id) for r in results])
    return [found[int(r.id)].state for r in results]


@pytest.fixture
def blocked():
    """One job of the "exclusive" key runs (to=1); three wait for its slot."""
    tasks.exclusive.enqueue(0)
    return [tasks.exclusive.enqueue(n) for n in range(1, 4)]


def test_release_dry_run_changes_nothing(blocked):
    result = jobs("release")
    assert result.code == 0
    assert result.lines[0] == (
        "Dry run: would release 3 blocked jobs where a slot of their key is free."
    )
    assert result.lines[-1] == "Nothing was changed. Run again with --yes to release them."
    assert states(blocked) == ["blocked"] * 3
    assert not AuditEntry.objects.exists()


def test_release_takes_only_free_slots_and_says_what_stays_blocked(blocked):
    Semaphore.objects.filter(key__endswith="/exclusive").update(value=1)  # one slot came back

    result = jobs("release", "--yes")

    assert result.lines[0] == (
        "1 blocked job released. 2 blocked jobs stay blocked: no slot of their key is free. "
        "Run again with --force to run them over the concurrency limit."
    )
    assert states(blocked) == ["ready", "blocked", "blocked"]
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.affected) == (ACTOR, "release all", 1)


def test_release_with_force_runs_them_over_the_limit_and_is_audited_as_such(blocked):
    assert jobs("release", "--force").lines[0] == (
        "Dry run: would release 3 blocked jobs over their concurrency limit."
    )
    assert states(blocked) == ["blocked"] * 3

    result = jobs("release", "--force", "--yes", "--id", str(blocked[0].id))

    assert result.lines[0] == f"1 blocked job with id {blocked[0].id} released."
    assert states(blocked) == ["ready", "blocked", "blocked"]
    assert Semaphore.objects.get(key__endswith="/exclusive").value == -1
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.affected, entry.details["force"]) == (
        "release all over the limit",
        1,
        True,
    )


def test_release_applies_to_blocked_jobs_only(blocked):
    with pytest.raises(CommandError, match="release applies to blocked jobs"):
        jobs("release", "--status", "ready")


def test_force_applies_to_release_only(blocked):
    with pytest.raises(CommandError, match="--force applies to release only"):
        jobs("discard", "--status", "blocked", "--force")
