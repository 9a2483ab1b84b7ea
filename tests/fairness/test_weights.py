"""Weights set at run time: they hold for new jobs, and a backlog feels them at once."""

from __future__ import annotations

from collections import Counter

import pytest

from steady_queue.fairness import clear_weight, set_weight
from steady_queue.models import FairWeight, ReadyExecution
from steady_queue.models.fair_share import effective_weight
from steady_queue.ops.audit import operation_performed

from .conftest import claim_all, enqueue_tenant, keys

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def announced():
    seen = []

    def listen(sender, **kwargs):
        seen.append(kwargs)

    operation_performed.connect(listen)
    yield seen
    operation_performed.disconnect(listen)


def two_backlogs(fair, count: int = 20) -> None:
    enqueue_tenant(fair.by_tenant, "A", count)
    enqueue_tenant(fair.by_tenant, "B", count)


def spacing(key: str) -> float:
    tags = sorted(
        ReadyExecution.objects.filter(fairness_key=key).values_list("fair_order", flat=True)
    )
    return tags[1] - tags[0]


def test_a_weight_set_respaces_the_keys_backlog_at_once(fair, announced):
    two_backlogs(fair)

    moved = set_weight("B", 4, actor="user:ops")

    assert moved == 20
    assert spacing("B") == pytest.approx(1 / 4)
    assert Counter(keys(claim_all()[:10])) == {"A": 2, "B": 8}
    (entry,) = announced
    assert (entry["action"], entry["actor"], entry["affected"]) == (
        "set-fair-weight",
        "user:ops",
        20,
    )
    assert entry["details"]["key"] == "B"


def test_new_jobs_of_the_key_take_the_weight_set(fair):
    set_weight("B", 2)

    enqueue_tenant(fair.by_tenant, "B", 3)

    assert spacing("B") == pytest.approx(1 / 2)
    assert FairWeight.objects.get(key="B").weight == 2


def test_setting_a_weight_again_replaces_it(fair):
    set_weight("B", 2)
    set_weight("B", 5)

    assert list(FairWeight.objects.values_list("key", "weight")) == [("B", 5)]


def test_a_weight_cleared_restores_the_declared_one_for_the_backlog_too(fair, announced):
    two_backlogs(fair)
    set_weight("B", 4)

    assert clear_weight("B") == 20

    assert not FairWeight.objects.exists()
    assert spacing("B") == pytest.approx(1)
    assert Counter(keys(claim_all()[:10])) == {"A": 5, "B": 5}
    assert [entry["action"] for entry in announced] == ["set-fair-weight", "clear-fair-weight"]


def test_a_tasks_own_weight_beats_the_keys_which_beats_the_declared_one(fair):
    set_weight("middle", 3)
    set_weight("middle", 8, task=fair.by_tenant)

    assert effective_weight(fair.by_tenant.module_path, "middle") == 8
    assert effective_weight(fair.weighted.module_path, "middle") == 3
    clear_weight("middle")
    assert effective_weight(fair.weighted.module_path, "middle") == 2  # @fair(weight=...)


def test_a_weight_for_one_task_moves_only_that_tasks_jobs(fair):
    enqueue_tenant(fair.by_tenant, "B", 4)
    enqueue_tenant(fair.weighted, "B", 4)

    assert set_weight("B", 2, task=fair.weighted.module_path) == 4

    weighted = ReadyExecution.objects.filter(job__task_path=fair.weighted.module_path)
    tags = sorted(weighted.values_list("fair_order", flat=True))
    assert tags[1] - tags[0] == pytest.approx(1 / 2)


@pytest.mark.parametrize(
    ("weight", "task", "error"),
    [
        (0, None, ValueError),
        ("3", None, TypeError),
        (2.5, None, TypeError),
        (2, "tests.tasks.fair.plain", ValueError),
        (2, "tests.tasks.nowhere.task", ValueError),
        (2, "tests.tasks.fair.WEIGHTS", ValueError),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(fair, announced, weight, task, error):
    enqueue_tenant(fair.by_tenant, "B", 3)
    before = list(ReadyExecution.objects.values_list("fair_order", flat=True))

    with pytest.raises(error):
        set_weight("B", weight, task=task)

    assert not FairWeight.objects.exists()
    assert list(ReadyExecution.objects.values_list("fair_order", flat=True)) == before
    assert announced == []
