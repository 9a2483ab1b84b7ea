"""Every action, run against the real engine, plain and from htmx."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from steady_queue import arguments
from steady_queue.models import Job, Pause, RecurringExecution, RecurringTask, Semaphore
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks

from .page_forms import confirm_form

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def state(job: Job) -> str:
    fresh = Job.objects.with_execution().filter(pk=job.pk).first()
    return fresh.state if fresh else "gone"


def confirmed_post(client, action_url: str, filters: dict):
    """Ask for "all matching", then confirm on the confirmation page, as an operator does."""
    asked = client.post(action_url, {"scope": "all", **filters}).content.decode()
    return client.post(action_url, confirm_form(asked))


def messages_of(response) -> list[str]:
    return [str(message) for message in response.wsgi_request._messages]


def test_retry_moves_a_failed_job_back_to_ready_and_redirects_back(admin_client, jobs):
    next_url = url("job-list", "failed")
    response = admin_client.post(url("job-retry", jobs.failed.pk), {"next": next_url})
    assert response.status_code == 302 and response.url == next_url
    assert state(jobs.failed) == "ready"
    assert messages_of(response) == [f"Job {jobs.failed.pk} will run again."]


def test_retried_job_succeeds_when_a_worker_runs_it(admin_client, tmp_path):
    failed = tasks.fail_once.enqueue(str(tmp_path / "marker"))
    run_ready_jobs()
    admin_client.post(url("job-retry", failed.id))
    run_ready_jobs()
    job = Job.objects.get(pk=failed.id)
    assert job.return_value == "succeeded on retry" and len(job.attempts) == 2


def test_an_htmx_action_answers_with_the_message_and_a_change_event(htmx, jobs):
    response = htmx.post(url("job-retry", jobs.failed.pk))
    assert response.status_code == 200
    assert json.loads(response["HX-Trigger"]) == {"sq:changed": {}}
    html = response.content.decode()
    assert 'id="sq-messages"' in html and "will run again" in html and "<html" not in html


def test_discard_deletes_a_pending_job_once_confirmed(admin_client, jobs):
    asked = admin_client.post(url("job-discard", jobs.pending.pk)).content.decode()
    assert state(jobs.pending) == "ready" and "Discard job #" in asked
    admin_client.post(url("job-discard", jobs.pending.pk), confirm_form(asked))
    assert state(jobs.pending) == "gone"


def test_cancel_ends_a_pending_job_once_confirmed_and_audits_it(admin_client, jobs):
    asked = admin_client.post(url("job-cancel", jobs.pending.pk)).content.decode()
    assert state(jobs.pending) == "ready" and "Cancel job #" in asked  # asked, nothing done
    admin_client.post(url("job-cancel", jobs.pending.pk), confirm_form(asked))
    assert state(jobs.pending) == "failed"
    failed = Job.objects.get(pk=jobs.pending.pk).failed_execution
    assert failed.exception_class == "steady_queue.exceptions.JobCancelled"
    entry = AuditEntry.objects.get()
    assert entry.action == "cancel" and entry.succeeded and entry.affected == 1


def test_the_cancel_confirmation_words_its_two_buttons_apart(admin_client, jobs):
    """Issue 25, 11: "Cancel #116" beside "Cancel" left the operator guessing."""
    asked = admin_client.post(url("job-cancel", jobs.pending.pk)).content.decode()
    assert f">Cancel job #{jobs.pending.pk}</button>" in asked
    assert ">Go back, change nothing</a>" in asked
    assert ">Cancel</a>" not in asked


def test_cancel_asks_a_running_job_to_stop_and_its_page_says_so(admin_client, jobs):
    asked = admin_client.post(url("job-cancel", jobs.running.pk)).content.decode()
    response = admin_client.post(
        url("job-cancel", jobs.running.pk), confirm_form(asked), follow=True
    )
    assert "asked to stop" in response.content.decode()
    assert state(jobs.running) == "running"  # until its task looks
    assert Job.objects.get(pk=jobs.running.pk).cancel_requested_at is not None
    html = admin_client.get(url("job-detail", jobs.running.pk)).content.decode()
    assert "cancel requested" in html


def test_cancel_all_matching_cancels_only_the_filtered_jobs(admin_client, db):
    kept = Job.objects.get(pk=tasks.record.using(queue_name="default").enqueue(1).id)
    cancelled = [
        Job.objects.get(pk=tasks.record.using(queue_name="low").enqueue(n).id) for n in range(3)
    ]
    response = confirmed_post(admin_client, url("jobs-cancel", "ready"), {"queue": "low"})
    assert "3 jobs were cancelled" in " ".join(messages_of(response))
    assert state(kept) == "ready"
    assert [state(job) for job in cancelled] == ["failed"] * 3


def test_dispatch_makes_a_scheduled_job_ready_now(admin_client, jobs):
    admin_client.post(url("job-dispatch", jobs.scheduled.pk))
    assert state(jobs.scheduled) == "ready"


def test_release_makes_a_blocked_job_ready_in_a_free_slot(admin_client, jobs):
    admin_client.post(url("job-release", jobs.blocked.pk))
    assert state(jobs.blocked) == "blocked"  # its key's one slot is held (test_release.py)
    Semaphore.objects.filter(key=jobs.blocked.concurrency_key).update(value=1)
    admin_client.post(url("job-release", jobs.blocked.pk))
    assert state(jobs.blocked) == "ready"


def test_an_action_on_a_job_in_another_state_says_so(htmx, jobs):
    response = htmx.post(url("job-retry", jobs.finished.pk))
    assert response.status_code == 200
    assert "only failed jobs can be retried" in response.content.decode()
    assert state(jobs.finished) == "finished"
    entry = AuditEntry.objects.get()
    assert not entry.succeeded and entry.affected == 0


def test_discarding_a_running_job_is_refused(admin_client, jobs):
    asked = admin_client.post(url("job-discard", jobs.running.pk)).content.decode()
    response = admin_client.post(
        url("job-discard", jobs.running.pk), confirm_form(asked), follow=True
    )
    assert "running job cannot be discarded" in response.content.decode()
    assert state(jobs.running) == "running"


def test_an_action_on_a_vanished_job_says_so(admin_client, db):
    response = admin_client.post(url("job-retry", 987654), follow=True)
    assert response.status_code == 404  # back on the job page, which says it is gone
    assert "Job 987654 no longer exists." in messages_of(response)


def test_retry_selected_retries_only_the_selected_jobs(admin_client, db):
    failed = [tasks.fail.enqueue(str(n)) for n in range(3)]
    run_ready_jobs()
    chosen = [failed[0].id, failed[2].id]
    response = admin_client.post(url("jobs-retry", "failed"), {"scope": "selected", "ids": chosen})
    assert response.status_code == 302
    assert sorted(
        Job.objects.filter(ready_execution__isnull=False).values_list("pk", flat=True)
    ) == sorted(int(pk) for pk in chosen)
    assert messages_of(response) == ["2 jobs will run again."]


def test_selected_jobs_that_changed_state_meanwhile_are_reported(admin_client, jobs):
    ids = [jobs.failed.pk, jobs.finished.pk]
    response = admin_client.post(url("jobs-retry", "failed"), {"scope": "selected", "ids": ids})
    assert messages_of(response) == [
        "1 job will run again. 1 selected job had changed state or no longer exists."
    ]


def test_bulk_action_with_nothing_selected_says_so(admin_client, jobs):
    response = admin_client.post(url("jobs-discard", "failed"), {"scope": "selected"})
    assert messages_of(response) == ["No job was selected."]
    assert state(jobs.failed) == "failed"


def test_all_matching_first_asks_for_confirmation_with_the_count(admin_client, db):
    for n in range(3):
        tasks.fail.enqueue(str(n))
    tasks.record.enqueue("ok")
    run_ready_jobs()
    response = admin_client.post(
        url("jobs-discard", "failed"), {"scope": "all", "task": "tests.tasks.dashboard.fail"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "Discard 3 jobs" in html
    assert "Task=tests.tasks.dashboard.fail" in html
    assert Job.objects.filter(failed_execution__isnull=False).count() == 3


def test_confirmed_all_matching_acts_only_on_the_filtered_jobs(admin_client, db):
    for n in range(3):
        tasks.fail.enqueue(str(n))
    tasks.fail.using(queue_name="low").enqueue("kept")
    run_ready_jobs()
    response = confirmed_post(admin_client, url("jobs-discard", "failed"), {"queue": "default"})
    assert messages_of(response) == ["3 jobs were discarded."]
    assert list(Job.objects.values_list("queue_name", flat=True)) == ["low"]
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.affected, entry.username) == ("discard all", 3, "root")
    assert entry.target == "failed jobs where Queue=default"


def test_confirmed_all_matching_with_an_argument_search_acts_on_matches_only(admin_client, db):
    tasks.fail.enqueue("match")
    tasks.fail.enqueue("other")
    run_ready_jobs()
    confirmed_post(admin_client, url("jobs-retry", "failed"), {"args": "match"})
    assert Job.objects.filter(ready_execution__isnull=False).get().arguments["args"] == ["match"]


def test_dispatch_all_matching_scheduled_jobs(admin_client, jobs):
    response = confirmed_post(admin_client, url("jobs-dispatch", "scheduled"), {})
    assert messages_of(response) == ["1 job is ready to run now."]
    assert state(jobs.scheduled) == "ready"


def test_a_bulk_action_that_does_not_fit_the_status_is_not_found(admin_client, jobs):
    response = admin_client.post(url("jobs-retry", "finished"), {"scope": "all", "confirmed": "1"})
    assert response.status_code == 404


def test_htmx_confirmation_comes_back_as_a_fragment(htmx, jobs):
    response = htmx.post(url("jobs-retry", "failed"), {"scope": "all"})
    html = response.content.decode()
    assert "<html" not in html and 'class="confirm"' in html and "Retry 1 job" in html


def test_pause_and_resume_a_queue(admin_client, jobs):
    admin_client.post(url("queue-pause", "low"))
    assert Pause.objects.filter(queue_name="low").exists()
    page = admin_client.get(url("queue-detail", "low")).content.decode()
    assert "paused" in page and "Resume" in page
    admin_client.post(url("queue-resume", "low"))
    assert not Pause.objects.exists()
    actions = list(AuditEntry.objects.order_by("pk").values_list("action", "target"))
    assert actions == [("pause", "queue low"), ("resume", "queue low")]


@pytest.fixture
def recurring(db) -> RecurringTask:
    return RecurringTask.objects.create(
        key="nightly-report",
        schedule="0 3 * * *",
        task_path="tests.tasks.dashboard.record",
        arguments=arguments.serialize(["report"], {"account_id": 7}),
        static=False,
    )


def test_run_a_recurring_task_now_records_the_run(admin_client, recurring):
    response = admin_client.post(url("recurring-run", recurring.key))
    run = RecurringExecution.objects.get(task_key=recurring.key)
    assert messages_of(response) == [
        f"Recurring task nightly-report was enqueued as job {run.job_id}."
    ]
    assert state(run.job) == "ready"


def test_disable_and_enable_a_recurring_task(admin_client, recurring):
    admin_client.post(url("recurring-disable", recurring.key))
    recurring.refresh_from_db()
    assert not recurring.enabled
    admin_client.post(url("recurring-enable", recurring.key))
    recurring.refresh_from_db()
    assert recurring.enabled


def test_an_action_on_a_vanished_recurring_task_says_so(admin_client, db):
    response = admin_client.post(url("recurring-run", "gone"))
    assert messages_of(response) == ["Recurring task gone no longer exists."]


@pytest.mark.parametrize(
    "name,args",
    [
        ("job-retry", [1]),
        ("jobs-discard", ["failed"]),
        ("queue-pause", ["default"]),
        ("recurring-run", ["x"]),
    ],
)
def test_actions_refuse_get(admin_client, name, args):
    assert admin_client.get(url(name, *args)).status_code == 405


def test_release_next_on_a_concurrency_key_releases_its_first_blocked_job(admin_client, jobs):
    key = jobs.blocked.concurrency_key
    Semaphore.objects.filter(key=key).update(value=1)  # a slot is free
    response = admin_client.post(url("concurrency-release", key), follow=True)
    assert messages_of(response) == [
        f"Job {jobs.blocked.pk} was released into a free slot and is ready to run."
    ]
    assert state(jobs.blocked) == "ready"
    response = admin_client.post(url("concurrency-release", key))
    assert messages_of(response) == [f"No job is blocked on {key}."]
