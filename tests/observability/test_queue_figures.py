"""The health probe and the scrape read indexes: a fixed number of queries, capped counts.

Their cost must not grow with the tables (an anonymous probe could multiply it): the
queries stay the same however many queues and jobs, counts stop at COUNT_CAP, and
failed jobs are counted per queue without reading the jobs table.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from steady_queue.models import FailedExecution, Job, Pause, ReadyExecution, queue_figures
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from tests import tasks
from tests.tasks import acceptance
from tests.tasks import groups as g

from .conftest import register
from .metrics import TOKEN, sample, scrape

pytestmark = pytest.mark.urls("tests.observability.urls")
HEALTH = "/queue/health"


@pytest.fixture
def metrics_token(settings):
    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN


def fill(queues: int, jobs_each: int) -> None:
    for n in range(queues):
        for _ in range(jobs_each):
            tasks.noop.using(backend="secondary", queue_name=f"q{n:02}").enqueue()


def fail_in(queue: str) -> Job:
    result = acceptance.fail.using(backend="secondary", queue_name=queue).enqueue("boom")
    run_ready_jobs(queues=[queue])
    return Job.objects.get(pk=result.id)


def statements(run) -> list[str]:
    with CaptureQueriesContext(connections["default"]) as captured:
        run()
    return [query["sql"] for query in captured.captured_queries]


def test_a_failure_records_its_jobs_queue(db):
    failed = fail_in("invoices")
    assert FailedExecution.objects.get(job=failed).queue_name == "invoices"


def test_a_cancel_and_a_dependency_failure_record_the_queue(db):
    cancelled = tasks.noop.using(backend="secondary", queue_name="mail").enqueue()
    Job.objects.get(pk=cancelled.id).cancel()
    assert FailedExecution.objects.get(job_id=cancelled.id).queue_name == "mail"

    wf = Workflow("chain")
    bad = wf.add(g.explode.using(backend="secondary", queue_name="reports"))
    below = wf.add(g.step.using(backend="secondary", queue_name="reports"), args=(1,), after=[bad])
    run = wf.enqueue()
    run_ready_jobs()
    assert FailedExecution.objects.get(job_id=run[below].id).queue_name == "reports"


def test_a_failed_execution_made_without_a_queue_takes_its_jobs(db):
    job = Job.objects.get(pk=tasks.noop.using(backend="secondary", queue_name="late").enqueue().id)
    ReadyExecution.objects.filter(job=job).delete()
    FailedExecution.objects.create(job=job, exception_class="x.Error")
    assert FailedExecution.objects.get(job=job).queue_name == "late"


@pytest.mark.usefixtures("metrics_token")
def test_failed_jobs_are_counted_per_queue_without_reading_the_jobs_table(db):
    fail_in("invoices")
    fail_in("invoices")
    fail_in("mail")
    sqls = statements(scrape)
    samples = scrape()
    assert sample(samples, "steady_queue_jobs", queue="invoices", state="failed") == 2
    assert sample(samples, "steady_queue_jobs", queue="mail", state="failed") == 1
    failed_table = FailedExecution._meta.db_table
    jobs_table = Job._meta.db_table
    reading_failed = [sql for sql in sqls if failed_table in sql]
    assert reading_failed and not any(jobs_table in sql for sql in reading_failed)


@pytest.mark.usefixtures("metrics_token")
def test_counts_stop_at_the_cap(db, monkeypatch):
    monkeypatch.setattr(queue_figures, "COUNT_CAP", 3)
    for _ in range(4):
        fail_in("q00")
    fill(1, 5)
    samples = scrape()
    assert sample(samples, "steady_queue_jobs", queue="q00", state="ready") == 3
    assert sample(samples, "steady_queue_jobs", queue="q00", state="failed") == 3


@pytest.mark.usefixtures("metrics_token")
def test_a_scrape_takes_the_same_queries_for_1_queue_as_for_40(db):
    fail_in("q00")
    fill(1, 2)
    few = len(statements(scrape))
    for n in range(0, 40, 3):
        fail_in(f"q{n:02}")
    fill(40, 2)
    assert len(statements(scrape)) == few
    samples = scrape()
    assert sample(samples, "steady_queue_jobs", queue="q39", state="ready") == 2
    assert sample(samples, "steady_queue_jobs", queue="q38", state="failed") is None
    assert sample(samples, "steady_queue_jobs", queue="q03", state="failed") == 1
    assert sample(samples, "steady_queue_queue_latency_seconds", queue="q17") is not None


def test_the_health_probe_takes_the_same_queries_for_1_queue_as_for_40(db):
    register("Supervisor")
    fill(1, 2)
    few = len(statements(lambda: Client().get(HEALTH, {"max_latency": "5m"})))
    fill(40, 2)
    ReadyExecution.objects.filter(queue_name="q33").update(
        created_at=timezone.now() - timedelta(hours=1)
    )
    Pause.objects.create(queue_name="q34")
    ReadyExecution.objects.filter(queue_name="q34").update(
        created_at=timezone.now() - timedelta(hours=1)
    )
    response = None

    def probe():
        nonlocal response
        response = Client().get(HEALTH, {"max_latency": "5m"})

    assert len(statements(probe)) == few
    latency = [p for p in response.json()["problems"] if p["problem"] == "latency"]
    assert latency == [{"problem": "latency", "subject": "q33"}]  # q34 is paused


def test_latency_is_the_wait_of_the_job_a_worker_takes_next(db):
    old = tasks.noop.using(backend="secondary", queue_name="lane", priority=5).enqueue()
    ReadyExecution.objects.filter(job_id=old.id).update(
        created_at=timezone.now() - timedelta(minutes=10)
    )
    tasks.noop.using(backend="secondary", queue_name="lane").enqueue()
    heads = queue_figures.next_ready_at(["lane", "nothing_here"])
    assert list(heads) == ["lane"]
    assert timezone.now() - heads["lane"] >= timedelta(minutes=10)


def test_queue_names_are_found_by_a_bounded_scan(db, monkeypatch):
    fill(5, 1)
    fail_in("zz")
    assert queue_figures.queue_names(ReadyExecution, FailedExecution) == [
        ["q00", "q01", "q02", "q03", "q04"],
        ["zz"],
    ]
    monkeypatch.setattr(queue_figures, "MAX_QUEUES", 3)
    assert queue_figures.queue_names(ReadyExecution) == [["q00", "q01", "q02"]]
