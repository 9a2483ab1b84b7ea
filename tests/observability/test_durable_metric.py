"""``steady_queue_durable_jobs{task,kind}``: durable jobs sleeping or waiting for a signal,
per task, in two grouped queries however many jobs and tasks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from tests.dashboard.durable_states import job_of, sleeping, waiting_for_signal
from tests.tasks import durable_console as durable
from tests.tasks import groups

from .metrics import TOKEN, scrape

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.observability.urls")]
NAME = "steady_queue_durable_jobs"
ONBOARD, NAP, PATIENT = (
    f"tests.tasks.durable_console.{name}" for name in ("onboard", "nap", "patient")
)


@pytest.fixture(autouse=True)
def token(settings):
    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN


def series(samples: dict) -> dict[tuple[str, str], float]:
    return {
        (dict(labels)["task"], dict(labels)["kind"]): value
        for (name, *labels), value in samples.items()
        if name == NAME
    }


def test_no_series_without_durable_jobs():
    wf = Workflow("upstream")  # a workflow step waiting upstream is no durable wait
    wf.add(groups.step, args=(2,), after=[wf.add(groups.step, args=(1,))])
    wf.enqueue()
    durable.nap.using(run_after=timedelta(hours=1)).enqueue()  # scheduled, not asleep

    assert series(scrape()) == {}


def test_sleeping_and_signal_waiting_jobs_per_task():
    for _ in range(3):
        durable.onboard.enqueue(1)
    durable.nap.enqueue(2)
    run_ready_jobs()  # three wait for "confirmed", one sleeps
    waiting_for_signal(job_of(durable.patient.enqueue()), "go", None)
    sleeping(job_of(durable.patient.enqueue()))

    assert series(scrape()) == {
        (ONBOARD, "awaiting_signal"): 3,
        (NAP, "sleeping"): 1,
        (PATIENT, "awaiting_signal"): 1,
        (PATIENT, "sleeping"): 1,
    }


def test_more_tasks_and_jobs_cost_no_more_queries():
    def durable_queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            scrape()
        return len(captured.captured_queries)

    empty = durable_queries()
    for task in (durable.onboard, durable.patient, durable.nap):
        for _ in range(4):
            sleeping(job_of(task.enqueue()))
            waiting_for_signal(job_of(task.enqueue()), "go")

    assert durable_queries() == empty
    assert len(series(scrape())) == 6
