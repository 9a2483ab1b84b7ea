"""What the read-only screens show."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from steady_queue import arguments
from steady_queue.models import Process, RecurringTask
from steady_queue_dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db


def get(client, name: str, *args, query: str = "") -> str:
    response = client.get(reverse(f"steady_queue_dashboard:{name}", args=args) + query)
    assert response.status_code == 200
    return response.content.decode()


def test_overview_counts_each_status_and_draws_the_activity(admin_client, jobs):
    html = get(admin_client, "overview")
    assert html.count('class="card-value"') == 10  # cancelled is a status of its own
    assert '<rect class="bar finished"' in html and '<rect class="bar failed"' in html
    assert "finished (1)" in html and "failed (1)" in html


def test_overview_day_span_draws_quarter_hour_bars(admin_client, jobs):
    html = get(admin_client, "overview", query="?span=day")
    assert 'aria-current="true">Last 24 hours' in html


def test_capped_counts_say_so(admin_client, jobs, monkeypatch):
    from steady_queue_dashboard.adapter import job_queries

    monkeypatch.setattr(job_queries, "COUNT_CAP", 0)
    html = get(admin_client, "job-list", "failed")
    assert html.count(">0+</span>") == 6  # every status has a job, but throttled and waiting


def test_queue_table_shows_size_latency_and_pause(admin_client, jobs):
    from steady_queue.models import Pause

    Pause.objects.create(queue_name="low")
    html = get(admin_client, "queue-list")
    assert ">low</a>" in html and "paused" in html and 'class="meter-bar"' in html


def test_processes_are_nested_under_their_supervisor_and_stale_ones_flagged(admin_client, jobs):
    supervisor = Process.objects.create(kind="Supervisor", name="sup", pid=1, hostname="box")
    Process.objects.filter(pk=jobs.worker.pk).update(
        supervisor=supervisor,
        last_heartbeat_at=timezone.now() - timedelta(hours=1),
        metadata={"queues": "*", "threads": 3},
    )
    html = get(admin_client, "process-list")
    assert html.index("sup</span>") < html.index("worker-1</span>")
    assert "depth-1 stale" in html and ">stale</span>" in html
    assert "threads</span> 3" in html
    assert f"/jobs/{jobs.running.pk}/" in html


def test_a_workers_job_count_memory_and_why_it_replaced_another_are_shown(admin_client, jobs):
    replaced = {"worker": "worker-old", "reason": "recycled after 1000 jobs", "at": "2026-11-25"}
    Process.objects.filter(pk=jobs.worker.pk).update(
        metadata={"threads": 3, "jobs_run": 412, "memory_mib": 230, "replaced": replaced}
    )
    html = get(admin_client, "process-list")
    assert "jobs run</span> 412" in html and "memory</span> 230 MiB" in html
    assert "worker-old, recycled after 1000 jobs" in html


def test_recurring_task_page_lists_its_last_runs(admin_client, db):
    task = RecurringTask.objects.create(
        key="report",
        schedule="*/10 * * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize([1], {"account_id": 2}),
        static=False,
    )
    runs = [task.enqueue_now() for _ in range(2)]
    html = get(admin_client, "recurring-detail", "report")
    assert "every 10 minutes" in html and "*/10 * * * *" in html
    assert all(f"/jobs/{job.pk}/" in html for job in runs)
    assert "1, account_id=2" in html


def test_concurrency_page_shows_semaphores_limits_and_blocked_counts(admin_client, jobs):
    html = get(admin_client, "concurrency")
    key = jobs.blocked.concurrency_key
    assert key in html and "?key=" in html and "Release next" in html


def test_audit_log_lists_actions_newest_first(admin_client, jobs):
    admin_client.post(reverse("steady_queue_dashboard:job-retry", args=[jobs.failed.pk]))
    admin_client.post(reverse("steady_queue_dashboard:queue-pause", args=["low"]))
    html = get(admin_client, "audit-log")
    assert html.index("queue low") < html.index(f"job {jobs.failed.pk}")
    assert AuditEntry.objects.count() == 2


def test_job_detail_shows_arguments_return_value_and_timeline(admin_client, jobs):
    html = get(admin_client, "job-detail", jobs.finished.pk)
    assert "&quot;account_id&quot;: 7" in html
    assert "Return value" in html and "Attempt 1 succeeded" in html


def test_running_job_detail_shows_its_process_and_progress(admin_client, jobs):
    html = get(admin_client, "job-detail", jobs.running.pk)
    assert "worker-1" in html and '<progress value="3" max="10"' in html
    assert "every 3s" in html  # it refreshes itself while the job runs


def test_times_are_relative_with_the_exact_time_on_hover(admin_client, jobs):
    html = get(admin_client, "job-list", "failed")
    assert re.search(r'<time datetime="20[^"]+" title="20\d\d-\d\d-\d\d [^"]+">[^<]+', html)
