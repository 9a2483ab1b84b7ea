"""The overview leads with what is wrong: no worker, no supervisor or scheduler, slow, failing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import checks
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from steady_queue import arguments
from steady_queue.configuration import Configuration
from steady_queue.models import FailedExecution, Job, Pause, Process, ReadyExecution, RecurringTask
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks

pytestmark = pytest.mark.django_db

OVERVIEW = reverse("steady_queue_dashboard:overview")


def process(kind: str, name: str, queues=None, age: timedelta = timedelta(0), supervisor=None):
    metadata = {"queues": queues} if queues is not None else {}
    return Process.objects.create(
        kind=kind,
        name=name,
        pid=1,
        hostname="h",
        metadata=metadata,
        supervisor=supervisor,
        last_heartbeat_at=timezone.now() - age,
    )


def healthy(queues=("*",)) -> Process:
    supervisor = process("Supervisor", "super")
    process("Worker", "worker", list(queues), supervisor=supervisor)
    process("Dispatcher", "dispatcher", supervisor=supervisor)
    return supervisor


def problems_of(client) -> str:
    html = client.get(OVERVIEW).content.decode()
    start = html.index('id="problems"')
    return html[start : html.index("</section>", start)]


def test_all_clear_when_processes_live_and_nothing_fails(admin_client):
    healthy()
    tasks.record.enqueue(1)
    text = problems_of(admin_client)
    assert "All clear." in text and 'class="problem danger"' not in text


def test_problems_come_before_everything_else_on_the_overview(admin_client):
    tasks.record.enqueue(1)
    html = admin_client.get(OVERVIEW).content.decode()
    assert html.index('id="problems"') < html.index("Jobs by status")
    assert "No Steady Queue process is running." in html
    # The cause first, then what it causes.
    assert html.index("No Steady Queue process") < html.index("No live worker: 1 job is waiting")


def test_ready_jobs_on_a_queue_no_live_worker_polls(admin_client):
    healthy(queues=["real_time", "beta*"])
    tasks.record.using(queue_name="low").enqueue(1)
    tasks.record.using(queue_name="beta_one").enqueue(1)
    text = problems_of(admin_client)
    assert "No live worker takes jobs from queue low: 1 job is waiting." in text
    assert "queue beta_one" not in text  # "beta*" polls it
    assert "Running workers listen to: beta*, real_time." in text
    # Configured queues nobody polls, without jobs yet: a warning, not an alarm.
    assert "No worker listens to background, default, other" in text


def test_a_worker_whose_heartbeat_stopped_does_not_count(admin_client):
    supervisor = process("Supervisor", "super")
    process("Worker", "old", ["*"], age=timedelta(hours=1), supervisor=supervisor)
    tasks.record.enqueue(1)
    text = problems_of(admin_client)
    assert "No live worker: 1 job is waiting in default (1)." in text
    assert "1 process stopped sending heartbeats." in text


def test_paused_queue_with_jobs_is_not_reported_as_unserved(admin_client):
    healthy(queues=["default"])
    tasks.record.using(queue_name="low").enqueue(1)
    Pause.objects.create(queue_name="low")
    assert "queue low" not in problems_of(admin_client)


def test_missing_or_stale_supervisor(admin_client):
    process("Worker", "orphan", ["*"])
    assert "No live supervisor" in problems_of(admin_client)
    Process.objects.all().update(last_heartbeat_at=timezone.now() - timedelta(hours=1))
    text = problems_of(admin_client)
    assert "No Steady Queue process is alive: their heartbeats stopped." in text


def make_recurring() -> RecurringTask:
    task = RecurringTask.objects.create(
        key="nightly",
        schedule="*/45 * * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize([], {}),
        static=False,
    )
    return task


def test_no_scheduler_while_recurring_tasks_are_enabled(admin_client):
    healthy()
    make_recurring()
    assert "No scheduler is running: recurring tasks do not run." in problems_of(admin_client)
    RecurringTask.objects.update(enabled=False)
    assert "No scheduler" not in problems_of(admin_client)


def test_recurring_pages_promise_no_next_run_without_a_scheduler(admin_client):
    healthy()
    make_recurring()
    for url in [
        reverse("steady_queue_dashboard:recurring-list"),
        reverse("steady_queue_dashboard:recurring-detail", args=["nightly"]),
    ]:
        html = admin_client.get(url).content.decode()
        assert "No scheduler is running" in html and "not scheduled: no scheduler" in html
        assert "in " + "4" not in html.split("Next run")[1][:200]
    process("Scheduler", "scheduler")
    html = admin_client.get(reverse("steady_queue_dashboard:recurring-list")).content.decode()
    assert "No scheduler is running" not in html and "<time" in html


def test_a_queue_behind_its_latency_threshold(admin_client):
    healthy()
    tasks.record.using(queue_name="low").enqueue(1)
    ReadyExecution.objects.update(created_at=timezone.now() - timedelta(minutes=20))
    assert "Queue low is behind: its oldest job has waited 20 min" in problems_of(admin_client)
    with override_settings(STEADY_QUEUE_DASHBOARD={"LATENCY_THRESHOLD": 3600}):
        assert "is behind" not in problems_of(admin_client)
    Process.objects.filter(kind="Worker").delete()  # unserved: said once, not as "behind"
    text = problems_of(admin_client)
    assert "No live worker: 1 job is waiting in low (1)." in text and "is behind" not in text


def fail_jobs(count: int, ago: timedelta = timedelta(0)) -> None:
    for n in range(count):
        tasks.fail.enqueue(f"card {n} declined")
    run_ready_jobs()
    recent = FailedExecution.objects.filter(created_at__gte=timezone.now() - timedelta(seconds=30))
    recent.update(created_at=timezone.now() - ago)


def test_a_failure_spike_against_the_usual_rate(admin_client):
    healthy()
    fail_jobs(6)
    text = problems_of(admin_client)
    assert "Failure spike: 6 jobs failed in the last 10 minutes." in text
    assert "None failed in the 60 minutes before." in text


def test_failures_at_the_usual_rate_are_no_spike(admin_client):
    healthy()
    fail_jobs(30, ago=timedelta(minutes=30))  # 30 in the hour before: about 5 per 10 min
    fail_jobs(6)
    assert "Failure spike" not in problems_of(admin_client)


def test_a_spike_above_a_low_usual_rate_says_the_rate(admin_client):
    healthy()
    fail_jobs(6, ago=timedelta(minutes=30))  # 6 in the hour before: about 1 per 10 min
    fail_jobs(12)
    text = problems_of(admin_client)
    assert "Failure spike: 12 jobs failed" in text and "Usually about 1 in that time." in text


def test_a_few_failures_are_no_spike(admin_client):
    healthy()
    fail_jobs(2)
    assert "Failure spike" not in problems_of(admin_client)


def test_idle_configured_queues_are_listed_and_can_be_paused_before_any_job(admin_client):
    html = admin_client.get(reverse("steady_queue_dashboard:queue-list")).content.decode()
    for name in ["default", "real_time", "background", "beta_one"]:
        assert f">{name}</a>" in html
    admin_client.post(reverse("steady_queue_dashboard:queue-pause", args=["beta_one"]))
    assert Pause.objects.filter(queue_name="beta_one").exists()
    html = admin_client.get(reverse("steady_queue_dashboard:queue-list")).content.decode()
    row = html[html.index(">beta_one</a>") :][:800]
    assert "paused" in row
    detail = admin_client.get(reverse("steady_queue_dashboard:queue-detail", args=["beta_one"]))
    assert detail.status_code == 200


def test_a_queue_that_does_not_exist_answers_404_with_a_message(admin_client):
    response = admin_client.get(reverse("steady_queue_dashboard:queue-detail", args=["nope"]))
    assert response.status_code == 404
    assert "There is no queue named “nope”" in response.content.decode()
    assert "<html" in response.content.decode()
    tasks.record.using(backend="secondary", queue_name="made_up").enqueue(1)
    run_ready_jobs()  # a queue with only finished jobs is still known
    assert (
        admin_client.get(
            reverse("steady_queue_dashboard:queue-detail", args=["made_up"])
        ).status_code
        == 200
    )


def test_check_warns_about_task_queues_no_configured_worker_polls():
    from steady_queue.checks.queues import check_unheard_queues

    assert check_unheard_queues() == []  # the default worker polls "*"
    workers = [Configuration.Worker(queues=["real_time", "beta*"])]
    with override_settings(STEADY_QUEUE=Configuration.Options(workers=workers)):
        found = check_unheard_queues()
    assert [message.id for message in found] == ["steady_queue.W201"]
    assert found[0].level == checks.WARNING
    assert "background, default, low, other" in found[0].msg
    assert "beta_one" not in found[0].msg and "real_time" not in found[0].msg


def test_check_warning_is_reported_by_manage_py_check():
    workers = [Configuration.Worker(queues=["real_time"])]
    with override_settings(STEADY_QUEUE=Configuration.Options(workers=workers)):
        ids = [message.id for message in checks.run_checks()]
    assert "steady_queue.W201" in ids


def test_overview_problems_cost_a_bounded_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    healthy(queues=["real_time"])
    make_recurring()
    fail_jobs(6)
    for n in range(10):
        tasks.record.using(queue_name=["low", "default", "background"][n % 3]).enqueue(n)
    Job.objects.update(created_at=timezone.now() - timedelta(hours=1))
    # 21 since task pauses: the paused state's count and the paused tasks' panel; 22 on
    # PostgreSQL, which reads pg_stat_activity for transactions holding back cleanup.
    with django_assert_max_num_queries(22):
        html = admin_client.get(OVERVIEW).content.decode()
    assert html.count('class="problem danger"') >= 2
