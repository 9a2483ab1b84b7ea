"""``steady_queue_fair_share_ready{queue,key}``: the busiest keys of each queue and the rest
as key="other" (bounded cardinality), in one query whatever the number of keys."""

from __future__ import annotations

import pytest

from steady_queue.metrics.collector import FAIR_KEYS
from tests import tasks
from tests.tasks import fair_ops

from .metrics import TOKEN, sample, scrape

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.urls("tests.observability.urls"),
    pytest.mark.usefixtures("fair_share"),
]
NAME = "steady_queue_fair_share_ready"


@pytest.fixture(autouse=True)
def token(settings):
    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN


def series(samples: dict) -> dict[tuple[str, str], float]:
    return {
        (dict(labels)["queue"], dict(labels)["key"]): value
        for (name, *labels), value in samples.items()
        if name == NAME
    }


def test_each_key_of_each_queue_with_its_ready_count():
    for tenant, count in (("acme", 3), ("globex", 1)):
        for n in range(count):
            fair_ops.weighted.enqueue(tenant, n)
    fair_ops.tenant_job.enqueue("acme")
    tasks.noop.using(queue_name="beta_one").enqueue()  # not a fair task: not a key here

    assert series(scrape()) == {
        ("beta_one", "acme"): 3,
        ("beta_one", "globex"): 1,
        ("default", "acme"): 1,
    }


def test_the_busiest_keys_and_the_rest_as_other():
    from steady_queue.backend import enqueue_all

    calls = [(fair_ops.weighted, ("big",), {})] * 30
    calls += [(fair_ops.weighted, (f"small-{n:02}",), {}) for n in range(FAIR_KEYS + 5)]
    enqueue_all(calls)
    samples = scrape()
    found = series(samples)
    assert len(found) == FAIR_KEYS + 1
    assert sample(samples, NAME, queue="beta_one", key="big") == 30
    # 25 keys of one job each: 19 shown (after "big"), 6 summed as "other".
    assert sample(samples, NAME, queue="beta_one", key="other") == 6
    assert sum(found.values()) == 30 + FAIR_KEYS + 5


def test_no_series_without_fair_jobs():
    tasks.noop.enqueue()
    assert series(scrape()) == {}
