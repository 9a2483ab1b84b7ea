"""Every storage's enqueue writes the same places in the fair order while fair share is
in use: the fast ones in their own statements (``fair_share.orders``), the portable one
through ``ReadyExecution.create_all_from_jobs``. Runs once per storage (see conftest).
"""

from __future__ import annotations

import pytest

from steady_queue.fairness import set_weight
from steady_queue.models import Job, ReadyExecution
from steady_queue.models.fair_share import HEAD_START
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def job_for(task, *args, **kwargs) -> Job:
    return Job.for_task_call(task, args, kwargs, backend="default")


def places(jobs: list[Job]) -> list[tuple[str, float]]:
    rows = ReadyExecution.objects.in_bulk([job.pk for job in jobs])
    return [(rows[job.pk].fairness_key, rows[job.pk].fair_order) for job in jobs]


def test_a_single_enqueue_starts_a_key_within_a_round(store, fair_share):
    store.enqueue([job_for(fair_share.by_tenant, "A", n=n) for n in range(3)])
    (job,) = store.enqueue([job_for(fair_share.by_tenant, "B")])

    start = 1 - HEAD_START  # A's first tag on an empty queue (V 0), and V from then on
    assert places([job]) == [("B", pytest.approx(2 * start))]


def test_a_bulk_enqueue_of_several_keys_and_weights_continues_each_backlog(store, fair_share):
    set_weight("heavy", 4)
    store.enqueue([job_for(fair_share.weighted, "heavy", n=0)])
    calls = [("heavy", 1), ("light", 2), ("heavy", 3), ("light", 4), ("heavy", 5)]
    jobs = store.enqueue([job_for(fair_share.weighted, key, n=n) for key, n in calls])
    first_heavy = 1 / 4 - HEAD_START / 4  # the first heavy job, on an empty queue

    assert places(jobs) == [
        ("heavy", pytest.approx(first_heavy + 1 / 4)),
        ("light", pytest.approx(first_heavy + 1 - HEAD_START)),  # V + a whole step
        ("heavy", pytest.approx(first_heavy + 2 / 4)),
        ("light", pytest.approx(first_heavy + 2 - HEAD_START)),
        ("heavy", pytest.approx(first_heavy + 3 / 4)),
    ]


def test_jobs_of_tasks_without_fair_are_one_more_key(store, fair_share):
    store.enqueue([job_for(fair_share.by_tenant, "A", n=n) for n in range(2)])
    jobs = store.enqueue([job_for(tasks.add, i, i) for i in range(2)])

    start = 1 - HEAD_START
    assert places(jobs) == [("", pytest.approx(2 * start)), ("", pytest.approx(2 * start + 1))]


def test_a_labelled_bulk_enqueue_is_tagged_too(store, fair_share):
    jobs = [job_for(fair_share.by_tenant, "A", n=n) for n in range(3)]
    for job in jobs:
        job.labels = ["tenant:A"]
    store.enqueue(jobs)

    start = 1 - HEAD_START
    assert places(jobs) == [("A", pytest.approx(start + n)) for n in range(3)]
