"""``metrics_view``: Prometheus text whose numbers match a known state of the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from steady_queue import storage
from steady_queue.models import ClaimedExecution, Job, ReadyExecution, TaskRollup
from steady_queue.models.execution.claimed_finish import Failure
from steady_queue.models.task_rollup import BUCKETS
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.tasks import acceptance

from .conftest import register, stale_age
from .metrics import TOKEN, URL, sample, scrape

pytestmark = [
    pytest.mark.urls("tests.observability.urls"),
    pytest.mark.usefixtures("metrics_token"),
]


@pytest.fixture
def metrics_token(settings):
    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN


@pytest.fixture
def known_state(db):
    """Two successes, a failure and a retry run; a job waiting 90 s; one discarded."""
    tasks.noop.enqueue()
    tasks.noop.enqueue()
    acceptance.fail.enqueue("boom")
    acceptance.policy_in_decorator.enqueue()  # fails once, retried a second later
    run_ready_jobs()
    waiting = tasks.noop.using(queue_name="background").enqueue()
    ReadyExecution.objects.filter(job_id=waiting.id).update(
        created_at=timezone.now() - timedelta(seconds=90)
    )
    Job.objects.get(pk=tasks.add.enqueue(1, 2).id).discard()
    register("Worker", queues=["*"])
    register("Supervisor", age=stale_age())


def test_counters_gauges_and_histograms_match_the_known_state(known_state):
    samples = scrape()
    noop, default = "tests.tasks.noop", "default"

    def counter(name, task):
        return sample(samples, f"steady_queue_jobs_{name}_total", task=task, queue=default)

    assert counter("finished", noop) == 2
    assert counter("failed", "tests.tasks.acceptance.fail") == 1
    assert counter("retried", "tests.tasks.acceptance.policy_in_decorator") == 1
    assert counter("discarded", "tests.tasks.add") == 1  # discarded, not cancelled
    assert counter("cancelled", "tests.tasks.add") == 0
    assert counter("failed", noop) == 0

    def jobs(queue, state):
        return sample(samples, "steady_queue_jobs", queue=queue, state=state)

    assert jobs("background", "ready") == 1
    assert jobs(default, "failed") == 1
    assert jobs(default, "scheduled") == 1  # the retry
    assert jobs(default, "ready") is None  # nothing ready there: no series
    assert 89 <= sample(samples, "steady_queue_queue_latency_seconds", queue="background") < 120
    assert sample(samples, "steady_queue_finished_jobs_kept") == 2

    # Histograms: every bucket cumulative, +Inf equal to the count, per task and queue.
    run = "steady_queue_job_run_duration_seconds"
    assert sample(samples, f"{run}_count", task=noop) == 2
    assert sample(samples, f"{run}_bucket", task=noop, le="+Inf") == 2
    assert sample(samples, f"{run}_bucket", task=noop, le=str(BUCKETS[-1])) == 2
    assert 0 <= sample(samples, f"{run}_sum", task=noop) < 5
    # Attempts that ended, whatever their outcome: 2 + 1 + 1 on the default queue.
    assert sample(samples, "steady_queue_job_wait_seconds_count", queue=default) == 4

    assert sample(samples, "steady_queue_processes", kind="Worker") == 1
    assert sample(samples, "steady_queue_processes", kind="Supervisor") == 0
    assert sample(samples, "steady_queue_processes", kind="Dispatcher") == 0
    oldest = sample(samples, "steady_queue_oldest_heartbeat_age_seconds")
    assert oldest >= stale_age().total_seconds()


def test_cancelled_jobs_are_their_own_outcome_apart_from_failed_and_discarded(db):
    """Issue 25, item 11: a job that ended with JobCancelled is no failure in the metrics."""
    acceptance.fail.enqueue("boom")
    run_ready_jobs()  # one failure of its own
    Job.objects.get(pk=tasks.noop.enqueue().id).cancel()  # not started: cancelled at once
    Job.objects.get(pk=tasks.noop.enqueue().id).discard()  # not started: discarded
    running = tasks.noop.using(queue_name="low").enqueue()
    (claimed,) = storage.claim(["low"], 1, None)
    Job.objects.get(pk=running.id).cancel()  # running: asked to stop
    # The run fails while its cancel is pending: it ends cancelled, not failed or retried.
    assert claimed.record(Failure(ValueError("stopped half way")))
    assert not ClaimedExecution.objects.exists()

    samples = scrape()

    def counter(name, task, queue="default"):
        return sample(samples, f"steady_queue_jobs_{name}_total", task=task, queue=queue)

    noop = "tests.tasks.noop"
    assert (counter("cancelled", noop), counter("discarded", noop)) == (1, 1)
    assert (counter("cancelled", noop, "low"), counter("failed", noop, "low")) == (1, 0)
    assert counter("failed", noop) == 0
    assert counter("failed", "tests.tasks.acceptance.fail") == 1
    assert counter("cancelled", "tests.tasks.acceptance.fail") == 0
    # The cancel while running was an attempt: it ran, and its run time is kept.
    assert sample(samples, "steady_queue_job_run_duration_seconds_count", task=noop) == 1

    def jobs(queue, state):
        return sample(samples, "steady_queue_jobs", queue=queue, state=state)

    assert (jobs("default", "failed"), jobs("default", "cancelled")) == (1, 1)
    assert (jobs("low", "failed"), jobs("low", "cancelled")) == (None, 1)


def test_a_scrape_takes_the_same_few_queries_however_many_tasks(
    known_state, django_assert_max_num_queries
):
    # One query per table of states (throttled jobs since rate limits, waiting workflow
    # steps since workflows, paused jobs and tasks since task pauses, the fair keys, the
    # sleeping and signal-waiting durable jobs), not per task.
    with django_assert_max_num_queries(17):
        scrape()
    queues = ["real_time", "low", "beta_one", "beta_two", "other"]
    for n in range(30):  # more tasks and queues: more rows, not more queries
        TaskRollup.objects.create(
            task_path=f"app.tasks.t{n}", queue_name=f"q{n}", period=TaskRollup.all_time(), runs=1
        )
        tasks.noop.using(queue_name=queues[n % len(queues)]).enqueue()
    with django_assert_max_num_queries(17):
        samples = scrape()
    assert sample(samples, "steady_queue_jobs_finished_total", task="app.tasks.t7", queue="q7") == 0
    assert sample(samples, "steady_queue_jobs", queue="other", state="ready") == 6


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", "Basic c2NyYXBlLXNlY3JldA==", f"Token {TOKEN}", "Bearer"],
)
def test_refused_without_the_token_or_a_staff_login(db, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = Client().get(URL, **headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"steady_queue" not in response.content


def test_staff_may_scrape_other_users_may_not(db):
    client = Client()
    user = User.objects.create_user("ops", password="pw")
    client.force_login(user)
    assert client.get(URL).status_code == 401
    user.is_staff = True
    user.save()
    assert "steady_queue_processes" in {name for name, *_ in scrape(client, HTTP_AUTHORIZATION="")}


def test_without_a_token_setting_only_staff_may(db, settings):
    settings.STEADY_QUEUE_METRICS_TOKEN = None
    assert Client().get(URL, HTTP_AUTHORIZATION="Bearer None").status_code == 401


def test_openmetrics_when_the_scraper_asks_for_it(known_state):
    accept = "application/openmetrics-text; version=1.0.0"
    response = Client().get(URL, HTTP_ACCEPT=accept, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")


def test_unreachable_database_answers_503(unreachable_database):
    response = Client().get(URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 503
    assert b"unreachable" in response.content


def test_only_get_and_head(db):
    response = Client().post(URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405


@pytest.mark.django_db(databases=["default", "billing"])
def test_a_backend_with_its_own_database_is_scraped_with_its_alias():
    from tests.tasks import billing

    billing.invoice.enqueue(1)
    tasks.noop.using(queue_name="low").enqueue()
    samples = scrape(data={"backend": "billing"})
    assert sample(samples, "steady_queue_jobs", queue="default", state="ready") == 1
    assert sample(samples, "steady_queue_jobs", queue="low", state="ready") is None
    assert sample(scrape(), "steady_queue_jobs", queue="low", state="ready") == 1
    response = Client().get(URL, {"backend": "nope"}, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404
