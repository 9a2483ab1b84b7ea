"""Small things operators hit: logout, bulk release, "Run now" times, chart axes, cron, favicon."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job
from steady_queue.task_options.recurring_task import describe
from steady_queue_dashboard import charts
from tests.tasks import dashboard as tasks

from .page_forms import hidden_fields

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def test_every_page_has_a_logout_button_that_posts(admin_client):
    html = admin_client.get(url("overview")).content.decode()
    form = re.search(r'<form class="logout" method="post" action="([^"]+)">', html)
    assert form and form.group(1) == reverse("admin:logout")
    response = admin_client.post(form.group(1))
    assert response.status_code in (200, 302)
    assert admin_client.get(url("overview")).status_code == 302  # logged out: to the login page


def test_the_logout_url_can_be_set(admin_client):
    with override_settings(STEADY_QUEUE_DASHBOARD={"LOGOUT_URL": "/accounts/logout/"}):
        html = admin_client.get(url("overview")).content.decode()
    assert 'action="/accounts/logout/"' in html


def test_blocked_jobs_can_be_released_in_bulk(admin_client):
    tasks.limited.enqueue(1)
    blocked = [Job.objects.get(pk=tasks.limited.enqueue(1).id) for _ in range(3)]
    html = admin_client.get(url("job-list", "blocked")).content.decode()
    assert "Release selected" in html
    chosen = [blocked[0].pk, blocked[2].pk]
    # No slot of the key is free: the release asks before running them over the limit.
    asked = admin_client.post(
        url("jobs-release", "blocked"), {"scope": "selected", "ids": chosen}
    ).content.decode()
    states = {job.pk: Job.objects.with_execution().get(pk=job.pk).state for job in blocked}
    assert set(states.values()) == {"blocked"}
    assert "Run 2 jobs over the limit" in asked
    admin_client.post(url("jobs-release", "blocked"), hidden_fields(asked, "sq-release-form"))
    states = {job.pk: Job.objects.with_execution().get(pk=job.pk).state for job in blocked}
    assert states == {blocked[0].pk: "ready", blocked[1].pk: "blocked", blocked[2].pk: "ready"}


def test_a_job_run_early_shows_no_future_due_time(admin_client):
    result = tasks.record.using(run_after=timedelta(minutes=5)).enqueue(1)
    html = admin_client.get(url("job-detail", result.id)).content.decode()
    assert "Scheduled for" in html
    Job.objects.get(pk=result.id).dispatch_now()
    html = admin_client.get(url("job-detail", result.id)).content.decode()
    assert "Scheduled for" not in html and "in 4 min" not in html and "in 5 min" not in html
    assert "Was due" in html and "run early" in html
    assert "<strong>Due</strong>" not in html  # no event to come in the timeline


def test_chart_axes_count_whole_jobs():
    now = timezone.now()
    for span in charts.SPANS.values():
        starts = charts.bucket_starts(now, span)
        for count in (0, 1, 3, 7, 250):
            chart = charts.activity_chart(
                {"finished": {starts[-1]: count}, "failed": {starts[-2]: 1}}, span, starts
            )
            labels = [tick.label for tick in chart.y_ticks]
            assert all(re.fullmatch(r"[0-9,]+", label) for label in labels), labels
            assert labels[0] == "0" and len(set(labels)) == len(labels)


@pytest.mark.parametrize(
    "schedule,words",
    [
        ("0 9 * * 1-5 0", "every weekday at 09:00"),
        ("30 12 * * * 15", "every day at 12:30:15"),
        ("*/5 * * * * 30", "every 5 minutes, at second 30"),
        ("* * * * * */10", "every 10 seconds"),
        ("1-3 * * * * 5", "1-3 * * * * 5"),
    ],
)
def test_six_field_cron_in_words(schedule, words):
    assert describe(schedule) == words


def test_pages_have_a_favicon(admin_client):
    html = admin_client.get(url("overview")).content.decode()
    href = re.search(r'<link rel="icon" href="([^"]+)"', html).group(1)
    assert href.endswith("steady_queue_dashboard/favicon.svg")
    path = finders.find("steady_queue_dashboard/favicon.svg")
    assert path and Path(path).read_text().startswith("<svg")


def test_pages_answer_without_use_tz(admin_client, settings):
    # USE_TZ = False is supported by the engine: its naive times must render everywhere,
    # a job run early included (its "Was due" time is shown exactly).
    settings.USE_TZ, settings.TIME_ZONE = False, "Europe/Paris"
    result = tasks.record.using(run_after=timedelta(minutes=5)).enqueue(1)
    Job.objects.get(pk=result.id).dispatch_now()
    tasks.record.using(run_after=timedelta(hours=1)).enqueue(2)
    pages = ["overview", "queue-list", "process-list", "recurring-list", "concurrency"]
    pages += ["rate-limits", "batch-list", "workflow-list"]
    pages += ["audit-log", "error-groups"]
    statuses = ["ready", "scheduled", "running", "blocked", "throttled", "failed"]
    statuses += ["waiting", "finished"]
    for page in (
        [url(name) for name in pages]
        + [url("job-list", s) for s in statuses]
        + [url("job-detail", result.id)]
    ):
        response = admin_client.get(page)
        assert response.status_code == 200, page
    html = admin_client.get(url("job-detail", result.id)).content.decode()
    assert "Was due" in html and "run early" in html
