"""Claim order of fair tasks: round-robin across keys by weight, FIFO within a key."""

from __future__ import annotations

from collections import Counter

import pytest

from steady_queue.models import ReadyExecution

from .conftest import claim_all, enqueue_tenant, keys

pytestmark = pytest.mark.django_db(transaction=True)


def test_keys_are_claimed_round_robin_in_enqueue_order_within_a_key(fair):
    enqueue_tenant(fair.by_tenant, "A", 10)
    enqueue_tenant(fair.by_tenant, "B", 2)
    enqueue_tenant(fair.by_tenant, "C", 1)

    claimed = claim_all()

    assert keys(claimed) == ["A", "B", "C", "A", "B", *["A"] * 8]
    assert [job.arguments["kwargs"]["n"] for job in claimed if job.fairness_key == "A"] == list(
        range(10)
    )


def test_a_key_that_arrives_behind_a_backlog_is_claimed_within_a_round(fair):
    enqueue_tenant(fair.by_tenant, "A", 50)
    assert keys(claim_all_of(5)) == ["A"] * 5

    enqueue_tenant(fair.by_tenant, "B", 3)

    assert keys(claim_all_of(6)) == ["A", "B", "A", "B", "A", "B"]


def test_weights_share_a_saturated_queue_exactly(fair):
    for tenant in ("light", "middle", "heavy"):
        enqueue_tenant(fair.weighted, tenant, 40)

    first = claim_all_of(35)  # five rounds of 1 + 2 + 4

    assert Counter(keys(first)) == {"light": 5, "middle": 10, "heavy": 20}


def test_priorities_come_before_fair_order(fair):
    enqueue_tenant(fair.by_tenant, "A", 3)
    enqueue_tenant(fair.urgent, "B", 2)

    assert keys(claim_all()) == ["B", "B", "A", "A", "A"]


def test_jobs_of_tasks_without_fair_share_the_queue_as_one_more_key(fair):
    enqueue_tenant(fair.by_tenant, "A", 4)
    from steady_queue.backend import enqueue_all

    enqueue_all([(fair.plain, (), {"n": n}) for n in range(3)])

    assert keys(claim_all()) == ["A", "", "A", "", "A", "", "A"]


def test_queues_have_fair_orders_of_their_own(fair):
    enqueue_tenant(fair.by_tenant, "A", 3)
    enqueue_tenant(fair.elsewhere, "A", 2)

    ready = ReadyExecution.objects.order_by("queue_name", "fair_order")
    orders = [(row.queue_name, row.fair_order) for row in ready]
    assert [order for queue, order in orders if queue == "other"] == [
        order for queue, order in orders if queue == "default"
    ][:2]


def claim_all_of(count: int) -> list:
    from steady_queue.storage import claim

    claimed = []
    for _ in range(count):
        claimed += [execution.job for execution in claim(["*"], 1, None)]
    return claimed


def test_keys_that_arrive_again_and_again_do_not_starve_a_backlog(fair):
    """Two tenants each enqueue their next job as their last one is claimed (chained
    jobs). Had a key that arrives started at V itself, the two would hold V, taking
    turns below k's next tag, and k would never be claimed again."""
    from steady_queue.fairness import set_weight

    set_weight("m", 2, task=fair.by_tenant)
    enqueue_tenant(fair.by_tenant, "k", 3)
    enqueue_tenant(fair.by_tenant, "m", 2)
    assert keys(claim_all_of(2)) == ["k", "m"]
    enqueue_tenant(fair.by_tenant, "j", 1)

    seen = []
    for _ in range(6):
        (job,) = claim_all_of(1)
        seen.append(job.fairness_key)
        if job.fairness_key in ("j", "m"):
            enqueue_tenant(fair.by_tenant, job.fairness_key, 1)

    assert "k" in seen[:2]
    assert seen.count("k") == 2


def test_the_portable_claim_takes_the_same_order(fair):
    from steady_queue.models import ReadyExecution

    enqueue_tenant(fair.by_tenant, "A", 5)
    enqueue_tenant(fair.by_tenant, "B", 2)

    claimed = []
    while batch := ReadyExecution.claim(["*"], 1, None):
        claimed += [execution.job.fairness_key for execution in batch]

    assert claimed == ["A", "B", "A", "B", "A", "A", "A"]


def test_a_claim_of_several_exact_queues_keeps_each_queues_fair_order(fair):
    enqueue_tenant(fair.by_tenant, "A", 4)
    enqueue_tenant(fair.by_tenant, "B", 2)
    enqueue_tenant(fair.elsewhere, "C", 1)

    claimed = claim_all(limit=1, queues=("default", "other"))

    assert keys(claimed) == ["A", "B", "A", "B", "A", "A", "C"]  # the queues in order
