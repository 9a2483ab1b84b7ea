"""Job lists: filters, argument search, keyset pagination and the per-status columns."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard import joblist
from tests.models import Account
from tests.tasks import dashboard as tasks

pytestmark = pytest.mark.django_db


def listed(client, status: str, query: str = "") -> list[int]:
    html = client.get(reverse("steady_queue_dashboard:job-list", args=[status]) + query)
    return [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html.content.decode())]


def ids(results) -> list[int]:
    return [int(result.id) for result in results]


def test_failed_jobs_filtered_by_task_queue_and_error(admin_client):
    wanted = tasks.fail.using(queue_name="low").enqueue("x")
    tasks.fail.enqueue("y")
    tasks.record.using(queue_name="low").enqueue(1)
    run_ready_jobs()
    query = "?task=tests.tasks.dashboard.fail&queue=low&error=builtins.RuntimeError"
    assert listed(admin_client, "failed", query) == [int(wanted.id)]
    assert listed(admin_client, "failed", "?error=builtins.KeyError") == []


def test_pending_jobs_filtered_by_priority(admin_client):
    high = tasks.record.using(priority=10).enqueue(1)
    tasks.record.enqueue(2)
    assert listed(admin_client, "ready", "?priority=10") == [int(high.id)]


def test_pending_jobs_are_listed_in_the_order_workers_take_them(admin_client):
    low = tasks.record.using(priority=-5).enqueue(1)
    first = tasks.record.enqueue(2)
    high = tasks.record.using(priority=50).enqueue(3)
    assert listed(admin_client, "ready") == ids([high, first, low])


def test_finished_jobs_filtered_by_period(admin_client):
    old = tasks.record.enqueue("old")
    recent = tasks.record.enqueue("recent")
    run_ready_jobs()
    Job.objects.filter(pk=old.id).update(finished_at=timezone.now() - timedelta(days=2))
    assert listed(admin_client, "finished", "?period=24h") == [int(recent.id)]
    assert listed(admin_client, "finished", "?period=7d") == ids([recent, old])


def test_finished_jobs_filtered_by_explicit_time_range(admin_client):
    job = tasks.record.enqueue("x")
    run_ready_jobs()
    Job.objects.filter(pk=job.id).update(finished_at=timezone.now() - timedelta(days=3))
    day = (timezone.now() - timedelta(days=3)).strftime("%Y-%m-%d")
    assert listed(admin_client, "finished", f"?after={day}T00:00&before={day}T23:59") == [
        int(job.id)
    ]
    assert listed(admin_client, "finished", f"?after={day}T23:59") == []


def test_blocked_jobs_filtered_by_concurrency_key(admin_client):
    tasks.limited.enqueue(1)
    blocked = tasks.limited.enqueue(1)
    tasks.limited.enqueue(2)
    tasks.limited.enqueue(2)
    key = Job.objects.get(pk=blocked.id).concurrency_key
    assert listed(admin_client, "blocked", f"?key={key}") == [int(blocked.id)]


def test_scheduled_jobs_are_flagged_when_overdue(admin_client):
    tasks.record.using(run_after=timedelta(hours=1)).enqueue("later")
    late = tasks.record.using(run_after=timedelta(hours=1)).enqueue("late")
    Job.objects.filter(pk=late.id).update(scheduled_at=timezone.now() - timedelta(minutes=5))
    Job.objects.get(pk=late.id).scheduled_execution.__class__.objects.filter(job_id=late.id).update(
        scheduled_at=timezone.now() - timedelta(minutes=5)
    )
    html = admin_client.get(reverse("steady_queue_dashboard:job-list", args=["scheduled"]))
    assert html.content.decode().count("overdue</span>") == 1


@pytest.mark.parametrize(
    "search,expected",
    [
        ("42", ["positional int"]),
        ('"42"', ["positional str"]),
        ("account_id=42", ["keyword int"]),
        ('account_id="42"', ["keyword str"]),
        ("name=Ada Lovelace", ["keyword text"]),
        ("true", ["positional bool"]),
    ],
)
def test_argument_search(admin_client, search, expected):
    labelled = {
        "positional int": tasks.record.enqueue("x", 42),
        "positional str": tasks.record.enqueue("42x", "42"),
        "keyword int": tasks.record.enqueue(account_id=42),
        "keyword str": tasks.record.enqueue(account_id="42"),
        "keyword text": tasks.record.enqueue(name="Ada Lovelace"),
        "positional bool": tasks.record.enqueue(True),
        "no match": tasks.record.enqueue(142, account_id=420),
    }
    found = listed(admin_client, "ready", "?" + _query(args=search))
    by_id = {int(result.id): label for label, result in labelled.items()}
    # A bare value also matches its text form ("42" the string for 42 the number).
    assert {by_id[pk] for pk in found} >= set(expected)
    assert "no match" not in {by_id[pk] for pk in found}


def test_argument_search_matches_model_instances_by_primary_key(admin_client):
    account = Account.objects.create(pk=42, name="Ada")
    wanted = tasks.record.enqueue(account)
    tasks.record.enqueue(7)
    assert listed(admin_client, "ready", "?args=42") == [int(wanted.id)]


def test_invalid_argument_search_is_reported(admin_client):
    tasks.record.enqueue(1)
    html = admin_client.get(
        reverse("steady_queue_dashboard:job-list", args=["ready"]) + "?args=x%3D"
    )
    assert "Give a value to search for" in html.content.decode()


def test_argument_search_reads_a_bounded_window_and_offers_to_continue(admin_client, monkeypatch):
    monkeypatch.setattr(joblist, "SEARCH_WINDOW", 3)
    results = [tasks.record.enqueue(n) for n in range(7)]
    results.append(tasks.record.enqueue(3))
    url = reverse("steady_queue_dashboard:job-list", args=["ready"])
    html = admin_client.get(url + "?args=3").content.decode()
    assert re.findall(r'id="job-row-(\d+)"', html) == []
    assert "Searched 3 jobs from here." in html
    further = re.search(r'href="([^"]+)"[^>]*>Search further', html).group(1).replace("&amp;", "&")
    html = admin_client.get(further).content.decode()
    assert re.findall(r'id="job-row-(\d+)"', html) == [results[3].id]


def test_argument_search_window_on_the_finished_list_too(admin_client, monkeypatch):
    # Finished jobs are ordered by a column of their own (the window is a range); the
    # other lists by an execution table (the window is a set of job ids).
    monkeypatch.setattr(joblist, "SEARCH_WINDOW", 3)
    results = [tasks.record.enqueue(n) for n in (3, 1, 2, 4, 5)]
    run_ready_jobs()
    url = reverse("steady_queue_dashboard:job-list", args=["finished"])
    html = admin_client.get(url + "?args=3").content.decode()
    assert re.findall(r'id="job-row-(\d+)"', html) == []
    further = re.search(r'href="([^"]+)"[^>]*>Search further', html).group(1).replace("&amp;", "&")
    html = admin_client.get(further).content.decode()
    assert re.findall(r'id="job-row-(\d+)"', html) == [results[0].id]


def test_keyset_pages_cover_every_row_once_in_both_directions(admin_client, monkeypatch):
    monkeypatch.setattr(joblist, "PAGE_SIZE", 4)
    expected = list(reversed(ids(tasks.record.enqueue(n) for n in range(10))))
    run_ready_jobs()
    # Equal finish times are broken by id: the order stays total.
    Job.objects.update(finished_at=timezone.now())
    url = reverse("steady_queue_dashboard:job-list", args=["finished"])
    seen, query, pages = [], "", []
    while True:
        html = admin_client.get(url + query).content.decode()
        pages.append(query)
        seen += [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)]
        next_link = re.search(r'href="([^"]+)"[^>]*rel="next"', html)
        if not next_link:
            break
        query = "?" + next_link.group(1).split("?", 1)[1].replace("&amp;", "&")
    assert seen == expected and len(pages) == 3
    html = admin_client.get(url + pages[-1]).content.decode()
    previous = re.search(r'href="([^"]+)"[^>]*rel="prev"', html).group(1).replace("&amp;", "&")
    html = admin_client.get(previous).content.decode()
    assert [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)] == expected[4:8]


def test_an_unreadable_cursor_starts_from_the_first_page(admin_client):
    job = tasks.record.enqueue(1)
    assert listed(admin_client, "ready", "?after=garbage!!") == [int(job.id)]


def test_filters_are_kept_by_pagination_links(admin_client, monkeypatch):
    monkeypatch.setattr(joblist, "PAGE_SIZE", 1)
    tasks.record.using(queue_name="low").enqueue(1)
    tasks.record.using(queue_name="low").enqueue(2)
    html = admin_client.get(
        reverse("steady_queue_dashboard:job-list", args=["ready"]) + "?queue=low"
    )
    assert re.search(r'href="[^"]*queue=low[^"]*after=[^"]*"', html.content.decode())


def test_in_progress_jobs_show_worker_and_progress(admin_client, jobs):
    html = admin_client.get(reverse("steady_queue_dashboard:job-list", args=["running"]))
    html = html.content.decode()
    assert "worker-1" in html and '<progress value="3" max="10"' in html and "p3" in html


def test_job_detail_shows_every_attempt_with_its_traceback(admin_client, tmp_path):
    result = tasks.fail.enqueue("first")
    run_ready_jobs()
    admin_client.post(reverse("steady_queue_dashboard:job-retry", args=[result.id]))
    Job.objects.filter(pk=result.id).update(arguments={"args": ["second"], "kwargs": {}})
    run_ready_jobs()
    html = admin_client.get(reverse("steady_queue_dashboard:job-detail", args=[result.id]))
    html = html.content.decode()
    assert html.count("Traceback (most recent call last)") == 2
    assert "RuntimeError: first" in html and "RuntimeError: second" in html
    assert "Attempt 2 failed" in html


def test_job_detail_links_its_recurring_task(admin_client):
    from steady_queue import arguments
    from steady_queue.models import RecurringTask

    task = RecurringTask.objects.create(
        key="hourly",
        schedule="0 * * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize([], {}),
        static=False,
    )
    job = task.enqueue_now()
    html = admin_client.get(reverse("steady_queue_dashboard:job-detail", args=[job.pk]))
    assert (
        reverse("steady_queue_dashboard:recurring-detail", args=["hourly"]) in html.content.decode()
    )


def test_a_gone_job_page_says_so(admin_client, db):
    response = admin_client.get(reverse("steady_queue_dashboard:job-detail", args=[12345]))
    assert response.status_code == 404
    assert "no longer exists" in response.content.decode()
    response = admin_client.get(
        reverse("steady_queue_dashboard:job-detail", args=[12345]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and "no longer exists" in response.content.decode()


def _query(**params) -> str:
    from urllib.parse import urlencode

    return urlencode(params)
