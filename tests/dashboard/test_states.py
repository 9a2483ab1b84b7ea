"""Issue 25's dashboard states: cancelled as its own outcome, huge input, readable pages."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job, Pause, Process, TaskRollup
from steady_queue.models.task_rollup import hour_of
from steady_queue.testing import dispatch_scheduled, run_ready_jobs
from steady_queue_dashboard import adapter, error_groups
from steady_queue_dashboard.adapter import timeline
from steady_queue_dashboard.adapter.task_stats import WINDOWS, task_stats
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import acceptance, cancelling
from tests.tasks import dashboard as dashboard_tasks

from .page_forms import confirm_form
from .test_queries import BUDGET

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


@pytest.mark.parametrize("length", [256, 5_000])
def test_pausing_a_queue_name_too_long_for_any_queue_answers_400_and_writes_nothing(
    admin_client, length
):
    response = admin_client.post(url("queue-pause", "q" * length))
    assert response.status_code == 400
    assert "queue names are at most 255 characters" in response.content.decode()
    assert not Pause.objects.exists() and not AuditEntry.objects.exists()


def test_a_queue_name_of_255_characters_can_still_be_paused(admin_client):
    admin_client.post(url("queue-pause", "q" * 255))
    assert Pause.objects.filter(queue_name="q" * 255).exists()


def test_runs_per_hour_over_a_span_under_an_hour_shows_the_count_and_the_minutes(admin_client):
    now = timezone.now()
    TaskRollup.objects.create(
        task_path="app.burst", queue_name="default", period=hour_of(now), runs=8, succeeded=8
    )
    (burst,) = task_stats(WINDOWS["day"])
    minutes = max(int((timezone.now() - hour_of(now)).total_seconds() // 60), 1)
    # 8 runs since the top of this hour are no 0.3 an hour (8 spread over 24 hours).
    assert burst.runs_per_hour is None and burst.observed_minutes in (minutes, minutes + 1)
    page = admin_client.get(reverse("steady_queue_dashboard:tasks")).content.decode()
    assert re.search(r">8 in the last \d+ min<", page), page


def test_runs_per_hour_is_over_the_hours_the_task_ran_not_the_whole_window(db):
    now = timezone.now()
    TaskRollup.objects.create(
        task_path="app.new",
        queue_name="default",
        period=hour_of(now) - timedelta(hours=2),
        runs=30,
        succeeded=30,
    )
    (new,) = task_stats(WINDOWS["day"])
    observed = (timezone.now() - (hour_of(now) - timedelta(hours=2))).total_seconds() / 3600
    assert new.runs_per_hour == pytest.approx(30 / observed, rel=0.01)


def test_the_processes_page_shows_metadata_for_people_not_python_reprs(admin_client, db):
    Process.objects.create(
        kind="Dispatcher",
        name="dispatcher-1",
        pid=2,
        hostname="box",
        metadata={"polling_interval": 0.1, "concurrency_maintenance_interval": 600.0},
    )
    Process.objects.create(
        kind="Worker",
        name="worker-1",
        pid=3,
        hostname="box",
        metadata={"queues": ["default", "reports"], "threads": 3, "pidfile": None},
    )
    html = admin_client.get(reverse("steady_queue_dashboard:process-list")).content.decode()
    assert "queues</span> default, reports</span>" in html
    assert "pidfile</span> —</span>" in html
    assert "concurrency_maintenance_interval</span> 10 min</span>" in html
    assert "polling_interval</span> 100 ms</span>" in html
    for repr_ in ("[&#x27;default&#x27;", "None", "600.0"):
        assert repr_ not in html


def _timeline_labels(job_id: int) -> list[str]:
    job = Job.objects.with_execution().get(pk=job_id)
    return [str(event.label) for event in timeline(job)]


def test_a_failed_job_whose_last_retry_ran_early_has_no_due_event_after_its_failure(
    admin_client,
):
    result = acceptance.policy_in_decorator.enqueue()
    # The retry, due in a second, is dispatched and fails at once (as "Run now" does).
    run_ready_jobs(include_scheduled=True)
    job = Job.objects.with_execution().get(pk=result.id)
    assert job.state == "failed" and len(job.attempts) == 2
    # Then its due time passes.
    Job.objects.filter(pk=job.pk).update(scheduled_at=timezone.now() - timedelta(microseconds=1))
    labels = _timeline_labels(job.pk)
    assert labels[-1] == "Attempt 2 failed" and "Due" not in labels, labels
    html = admin_client.get(reverse("steady_queue_dashboard:job-detail", args=[job.pk]))
    assert "<strong>Due</strong>" not in html.content.decode()


def test_a_retry_made_due_after_its_failure_still_shows_when_it_was_due(db):
    result = acceptance.policy_in_decorator.enqueue()
    run_ready_jobs()  # attempt 1 fails; the retry is scheduled a second later
    Job.objects.filter(pk=result.id).update(scheduled_at=timezone.now())
    dispatch_scheduled(all_=True)
    labels = _timeline_labels(result.id)
    assert labels == ["Enqueued", "Attempt 1 started", "Attempt 1 failed", "Due", "Ready"]


# Item 11: a cancelled job is cancelled, not failed, wherever the dashboard shows it.


@pytest.fixture
def outcomes(db) -> dict[str, int]:
    """One job failed by its task, one cancelled before it ran, one cancelled while running."""
    failed = dashboard_tasks.fail.enqueue("it broke").id
    run_ready_jobs()
    waiting = dashboard_tasks.record.using(queue_name="low").enqueue(1).id
    Job.objects.get(pk=waiting).cancel()
    running = cancelling.reports_progress.enqueue().id
    run_ready_jobs()
    return {"failed": int(failed), "waiting": int(waiting), "running": int(running)}


def _listed(client, status: str, query: str = "") -> set[int]:
    html = client.get(url("job-list", status) + query).content.decode()
    return {int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)}


def test_cancelled_jobs_have_their_own_list_tab_and_count_apart_from_failed(admin_client, outcomes):
    assert _listed(admin_client, "failed") == {outcomes["failed"]}
    assert _listed(admin_client, "cancelled") == {outcomes["waiting"], outcomes["running"]}
    counts = adapter.status_counts()
    assert (counts["failed"].value, counts["cancelled"].value) == (1, 2)
    html = admin_client.get(url("job-list", "cancelled")).content.decode()
    assert re.search(r'aria-current="page">Cancelled <span class="count">2</span>', html), html
    overview = admin_client.get(url("overview")).content.decode()
    assert "status-cancelled" in overview and "failed (1)" in overview


def test_the_cancelled_list_filters_and_stays_within_its_query_budget(
    admin_client, outcomes, django_assert_max_num_queries
):
    for n in range(10):
        Job.objects.get(pk=dashboard_tasks.record.enqueue(n).id).cancel()
    assert _listed(admin_client, "cancelled", "?queue=low") == {outcomes["waiting"]}
    task = "tests.tasks.cancelling.reports_progress"
    assert _listed(admin_client, "cancelled", f"?task={task}") == {outcomes["running"]}
    with django_assert_max_num_queries(BUDGET["cancelled"]):
        assert len(_listed(admin_client, "cancelled")) == 12


def test_retry_and_discard_all_matching_act_on_exactly_the_cancelled_jobs_shown(
    admin_client, outcomes
):
    asked = admin_client.post(url("jobs-retry", "cancelled"), {"scope": "all", "queue": "low"})
    admin_client.post(url("jobs-retry", "cancelled"), confirm_form(asked.content.decode()))
    states = {job.pk: job.state for job in Job.objects.with_execution()}
    assert states == {
        outcomes["failed"]: "failed",
        outcomes["waiting"]: "ready",  # a cancelled job can still be run again
        outcomes["running"]: "failed",
    }
    asked = admin_client.post(url("jobs-discard", "failed"), {"scope": "all"})
    admin_client.post(url("jobs-discard", "failed"), confirm_form(asked.content.decode()))
    assert set(Job.objects.values_list("pk", flat=True)) == {
        outcomes["waiting"],
        outcomes["running"],
    }


def test_a_cancelled_jobs_page_says_cancelled_when_and_by_whom_without_a_traceback(
    admin_client, db, django_assert_max_num_queries
):
    pk = dashboard_tasks.record.enqueue(1).id
    asked = admin_client.post(url("job-cancel", pk)).content.decode()
    admin_client.post(url("job-cancel", pk), confirm_form(asked))
    with django_assert_max_num_queries(BUDGET["job"] + 1):  # + the audit entry, by its date
        html = admin_client.get(url("job-detail", pk)).content.decode()
    assert '<span class="badge state-cancelled">Cancelled</span>' in html
    facts = re.search(r'<div class="wide cancellation">.*?</div>', html, re.DOTALL).group(0)
    assert "by <strong>root</strong>" in facts and '<span class="muted">cancelled</span>' in facts
    assert "Never attempted: it was cancelled before it ran." in html
    assert "state-failed" not in html and "JobCancelled" not in html and "traceback" not in html


def test_a_job_cancelled_while_running_shows_its_attempt_cancelled_not_a_traceback(
    admin_client, outcomes
):
    html = admin_client.get(url("job-detail", outcomes["running"])).content.decode()
    assert '<span class="badge state-cancelled">cancelled</span>' in html
    assert "Attempt 1 cancelled" in html and "Attempt 1 failed" not in html
    assert 'class="code traceback"' not in html and "Traceback (most recent" not in html
    labels = _timeline_labels(outcomes["waiting"])
    assert labels == ["Enqueued", "Cancelled"]


def test_cancelled_jobs_are_no_error_group_and_no_failure_on_the_chart(admin_client, outcomes):
    groups = error_groups.error_groups().groups
    assert [group.exception_class for group in groups] == ["builtins.RuntimeError"]
    now = timezone.now()
    starts = [now - timedelta(minutes=5)]
    assert sum(adapter.activity(starts, timedelta(minutes=10))["failed"].values()) == 1


@pytest.mark.parametrize("days", ["3000000", "99999999999", "0", "soon"])
def test_the_fill_command_refuses_a_span_of_days_no_date_holds_as_a_usage_error(db, days):
    with pytest.raises(CommandError, match="is not a number of days from 1 to 36500"):
        call_command("steady_queue_dashboard_fill", "--days", days, stdout=StringIO())
    assert not Job.objects.exists()
