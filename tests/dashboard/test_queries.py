"""Each page runs a bounded number of queries, however many rows it shows (no N+1)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from steady_queue import arguments
from steady_queue.models import Job, Process, ReadyExecution, RecurringTask
from steady_queue.pauses import pause_task
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks

from .conftest import make_jobs
from .test_pages import page_urls

pytestmark = pytest.mark.django_db

# Queries per page, counted once and fixed here: the session and user are 2 of them.
BUDGET = {
    # The problem list reads processes, recent failures, enabled recurring tasks and
    # the latest failures' errors: 4 more than the counts (10), chart, queues and health,
    # and the paused tasks.
    # + PostgreSQL's pg_stat_activity, for transactions holding back cleanup.
    "overview": 22,
    "overview-day": 22,
    "queues": 4,
    "queue": 10,  # + whether the queue exists, its ready jobs by fairness key
    "job": 5,  # + its durable records (steps, sleeps, waits)
    "processes": 4,
    "recurring": 4,  # + whether a scheduler is alive
    "concurrency": 7,
    "rate-limits": 6,  # the waiting windows, the others, their throttled jobs, the total
    "batches": 3,  # one page of batches, their callbacks read from their own rows
    "workflows": 3,
    "audit": 3,
    # The window's sums, the sparklines' hours, the queue names (2), the paused tasks.
    "tasks": 7,
    # The page of jobs, the steps done by its rows, the next deadline, the two tab counts.
    "waits": 7,
    "archive": 3,  # one page of archived jobs
    "retention": 3,  # the day's prune tallies
    # One count per status tab (10), the page, and the session, user and queue names.
    "ready": 15,
    "scheduled": 15,
    "running": 15,
    "blocked": 15,
    "throttled": 15,
    "paused": 15,
    "waiting": 15,
    "failed": 15,
    "cancelled": 15,
    "finished": 15,
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
        tasks.call_partner.enqueue(n % 4)  # two ready and one throttled per window
        tasks.export_all.enqueue(n)
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
            task_path="tests.tasks.dashboard.record",
            arguments=arguments.serialize([n], {}),
            static=False,
        )
        task.enqueue_now()
    pause_task(tasks.export_all)  # its jobs wait as paused
    assert Job.objects.count() > 60
    return jobs


@pytest.mark.parametrize("page", list(BUDGET))
def test_page_query_count_is_bounded(admin_client, many, page, django_assert_max_num_queries):
    url = page_urls(many)[page]
    with django_assert_max_num_queries(BUDGET[page]):
        assert admin_client.get(url).status_code == 200


@pytest.mark.parametrize("page", ["failed", "overview", "running"])
def test_fragment_query_count_is_bounded(admin_client, many, page, django_assert_max_num_queries):
    url = page_urls(many)[page]
    with django_assert_max_num_queries(BUDGET[page]):
        assert admin_client.get(url, HTTP_HX_REQUEST="true").status_code == 200


def test_argument_search_adds_one_query(admin_client, many, django_assert_max_num_queries):
    url = reverse("steady_queue_dashboard:job-list", args=["finished"]) + "?args=account_id=3"
    with django_assert_max_num_queries(BUDGET["finished"] + 1):
        html = admin_client.get(url).content.decode()
    assert "account_id=3" in html


def test_short_task_filter_adds_one_query(admin_client, many, django_assert_max_num_queries):
    url = (
        reverse("steady_queue_dashboard:job-list", args=["failed"])
        + "?task=fail&after=2000-01-01T00:00"
    )
    with django_assert_max_num_queries(BUDGET["failed"] + 1):
        html = admin_client.get(url).content.decode()
    assert "job-row-" in html


@pytest.mark.parametrize("status", ["failed", "scheduled"])
def test_confirmation_pages_are_bounded(admin_client, many, status, django_assert_max_num_queries):
    action = {"failed": "retry", "scheduled": "dispatch"}[status]
    url = reverse(f"steady_queue_dashboard:jobs-{action}", args=[status])
    with django_assert_max_num_queries(6):
        html = admin_client.post(url, {"scope": "all", "queue": "default"}).content.decode()
    assert 'id="sq-confirm-form"' in html
    one = reverse("steady_queue_dashboard:job-discard", args=[many.failed.pk])
    with django_assert_max_num_queries(5):
        html = admin_client.post(one).content.decode()
    assert 'id="sq-confirm-form"' in html


def test_audit_page_with_many_entries_is_bounded(admin_client, many, django_assert_max_num_queries):
    for pk in Job.objects.values_list("pk", flat=True)[:30]:
        admin_client.post(reverse("steady_queue_dashboard:job-retry", args=[pk]))
    with django_assert_max_num_queries(BUDGET["audit"]):
        html = admin_client.get(reverse("steady_queue_dashboard:audit-log")).content.decode()
    assert html.count('<a href="/jobs/') >= 30
