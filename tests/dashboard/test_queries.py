"""Each page runs a bounded number of queries, however many rows it shows (no N+1)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from steady_queue import arguments
from steady_queue.models import Job, Process, ReadyExecution, RecurringTask
from steady_queue.testing import run_ready_jobs
from tests.dashboard import tasks

from .conftest import make_jobs
from .test_pages import page_urls

pytestmark = pytest.mark.django_db

# Queries per page, counted once and fixed here: the session and user are 2 of them.
BUDGET = {
    "overview": 13,
    "overview-day": 13,
    "queues": 4,
    "queue": 8,
    "job": 4,
    "processes": 4,
    "recurring": 3,
    "concurrency": 7,
    "audit": 3,
    "pending": 11,
    "scheduled": 11,
    "in-progress": 11,
    "blocked": 11,
    "failed": 11,
    "finished": 11,
}


@pytest.fixture
def many(db):
    """Several rows of every kind: a per-row query would multiply the count."""
    jobs = make_jobs()
    supervisor = Process.objects.create(kind="Supervisor", name="super", pid=1, hostname="h")
    for n in range(12):
        tasks.fail.using(queue_name="low" if n % 2 else "default").enqueue(f"error {n}")
        tasks.record.enqueue(n, account_id=n)
        tasks.record.using(run_after=timedelta(minutes=n + 1)).enqueue(n)
        tasks.limited.enqueue(f"key-{n % 3}")
    run_ready_jobs()
    for n in range(6):
        worker = Process.objects.create(
            kind="Worker", name=f"w{n}", pid=100 + n, hostname="h", supervisor=supervisor
        )
        tasks.crawl.enqueue(steps=n + 1)
        ReadyExecution.claim(["*"], 1, worker)
    for n in range(8):
        tasks.record.using(queue_name=["low", "background", "other"][n % 3]).enqueue(n)
    for n in range(5):
        task = RecurringTask.objects.create(
            key=f"every-{n}",
            schedule=f"*/{n + 1} * * * *",
            task_path="tests.dashboard.tasks.record",
            arguments=arguments.serialize([n], {}),
            static=False,
        )
        task.enqueue_now()
    assert Job.objects.count() > 60
    return jobs


@pytest.mark.parametrize("page", list(BUDGET))
def test_page_query_count_is_bounded(admin_client, many, page, django_assert_max_num_queries):
    url = page_urls(many)[page]
    with django_assert_max_num_queries(BUDGET[page]):
        assert admin_client.get(url).status_code == 200


@pytest.mark.parametrize("page", ["failed", "overview", "in-progress"])
def test_fragment_query_count_is_bounded(admin_client, many, page, django_assert_max_num_queries):
    url = page_urls(many)[page]
    with django_assert_max_num_queries(BUDGET[page]):
        assert admin_client.get(url, HTTP_HX_REQUEST="true").status_code == 200


def test_argument_search_adds_one_query(admin_client, many, django_assert_max_num_queries):
    url = reverse("steady_queue_dashboard:job-list", args=["finished"]) + "?args=account_id=3"
    with django_assert_max_num_queries(BUDGET["finished"] + 1):
        html = admin_client.get(url).content.decode()
    assert "account_id=3" in html
