"""``manage.py steady_queue_queues weight KEY WEIGHT [--task PATH]`` and ``weight KEY
--clear``: a dry run until --yes, audited as the OS user, bad input refused (exit status 2)
with nothing written."""

from __future__ import annotations

import getpass

import pytest
from django.core.management.base import CommandError

from steady_queue.fairness import set_weight
from steady_queue.models import FairWeight
from steady_queue_dashboard.models import AuditEntry

from .conftest import run_command

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fair_share")]
ACTOR = f"os:{getpass.getuser()}"
WEIGHTED = "tests.tasks.fair_ops.weighted"


def queues(*args: str):
    return run_command("steady_queue_queues", *args)


def test_setting_a_weight_is_a_dry_run_until_yes_then_audited():
    dry = queues("weight", "acme", "3", "--task", WEIGHTED)

    assert dry.lines == [
        f"Dry run: would set the weight of fairness key acme in task {WEIGHTED} to 3 "
        "(now: its task's declared weight).",
        "Nothing was changed. Run again with --yes to set it.",
    ]
    assert not FairWeight.objects.exists() and not AuditEntry.objects.exists()

    done = queues("weight", "acme", "3", "--task", WEIGHTED, "--yes")

    assert done.lines == [
        f"Fairness key acme now weighs 3 in task {WEIGHTED} (was: its task's declared weight). "
        "0 ready jobs moved.",
        f"Recorded in the audit log as {ACTOR}.",
    ]
    row = FairWeight.objects.get()
    assert (row.key, row.task_path, row.weight) == ("acme", WEIGHTED, 3)
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target) == (
        ACTOR,
        "set-fair-weight",
        "fairness key acme",
    )
    assert entry.details["task"] == WEIGHTED


def test_a_weight_for_every_task_and_its_change():
    set_weight("acme", 2)
    done = queues("weight", "acme", "5", "--yes")
    assert done.lines[0] == (
        "Fairness key acme now weighs 5 in every fair task (was: 2, set at runtime). "
        "0 ready jobs moved."
    )
    assert FairWeight.objects.get(task_path="").weight == 5
    set_weight("globex", 7, task=WEIGHTED)
    assert queues("list").lines[-2:] == [
        "Fairness key acme weighs 5 in every fair task.",
        f"Fairness key globex weighs 7 in task {WEIGHTED}.",
    ]


def test_clearing_is_a_dry_run_until_yes_then_audited():
    set_weight("acme", 4)
    AuditEntry.objects.all().delete()
    dry = queues("weight", "acme", "--clear")
    assert dry.lines[0].startswith("Dry run: would clear the weight of fairness key acme")
    assert FairWeight.objects.exists()

    done = queues("weight", "acme", "--clear", "--yes")

    assert done.lines[0] == (
        "Fairness key acme weighs what its task declares again in every fair task (was: 4). "
        "0 ready jobs moved."
    )
    assert not FairWeight.objects.exists()
    assert AuditEntry.objects.get().action == "clear-fair-weight"
    assert queues("weight", "acme", "--clear", "--yes").lines == [
        "No weight is set for fairness key acme in every fair task."
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("weight",),
        ("weight", "acme"),
        ("weight", "acme", "0"),
        ("weight", "acme", "-2"),
        ("weight", "acme", "2.5"),
        ("weight", "acme", "lots"),
        ("weight", "acme", "99999999999"),
        ("weight", "acme", "2", "--task", "tests.tasks.noop"),
        ("weight", "acme", "2", "--task", "tests.tasks.nothing"),
        ("weight", "k" * 300, "2"),
        ("weight", "acme", "2", "--clear"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(args):
    with pytest.raises(CommandError) as refused:
        queues(*args, "--yes")
    assert refused.value.returncode == 2
    assert not FairWeight.objects.exists() and not AuditEntry.objects.exists()


def test_other_actions_take_no_weight():
    with pytest.raises(CommandError, match="takes one name"):
        queues("pause", "default", "3")
