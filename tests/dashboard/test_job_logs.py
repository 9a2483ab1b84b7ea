"""The job page's log lines and live stack: what is shown, to whom, at what cost."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job, JobLogLine, StackRequest
from steady_queue_dashboard.masking import MASK
from tests.tasks import logging_tasks
from tests.tasks import masked as masked_tasks

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def log(job: Job, *messages: str, attempt: int | None = None, first: int = 1) -> None:
    attempt = attempt or len(job.attempts) + 1
    JobLogLine.objects.bulk_create(
        JobLogLine(
            job=job,
            attempt=attempt,
            number=first + index,
            logged_at=timezone.now(),
            level=logging.WARNING if "warn" in message else logging.INFO,
            logger="tests.tasks",
            message=message,
        )
        for index, message in enumerate(messages)
    )


@pytest.fixture
def log_viewer_client(db) -> Client:
    """Staff with the view permission of log lines (and not manage_jobs)."""
    user = User.objects.create_user("logs", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_joblogline"))
    client = Client()
    client.force_login(user)
    return client


def test_the_log_shows_the_running_attempts_lines_and_polls(admin_client, jobs):
    log(jobs.running, "first step done", "a warning here")

    html = admin_client.get(url("job-logs", jobs.running.pk), HTTP_HX_REQUEST="true").text

    assert "first step done" in html
    assert "a warning here" in html
    assert 'class="level-warning"' in html
    assert 'hx-trigger="every 2s"' in html
    assert "Attempt 1" in html


def test_a_finished_jobs_log_shows_its_last_attempt_and_stops_polling(admin_client, jobs):
    log(jobs.finished, "all done", attempt=1)

    html = admin_client.get(url("job-logs", jobs.finished.pk), HTTP_HX_REQUEST="true").text

    assert "all done" in html
    assert "every 2s" not in html


def test_an_earlier_attempt_is_shown_when_asked(admin_client, jobs):
    log(jobs.failed, "first try", attempt=1)
    log(jobs.failed, "second try", attempt=2)

    latest = admin_client.get(url("job-logs", jobs.failed.pk)).text
    earlier = admin_client.get(url("job-logs", jobs.failed.pk) + "?attempt=1").text

    assert "second try" in latest and "first try" not in latest
    assert "first try" in earlier and "second try" not in earlier


def test_lines_dropped_by_the_cap_are_announced(admin_client, jobs):
    log(jobs.running, "line eight", "line nine", first=8)

    html = admin_client.get(url("job-logs", jobs.running.pk)).text

    assert "7 earlier lines dropped" in html
    assert html.index("7 earlier lines dropped") < html.index("line eight")


def test_an_empty_log_says_so(admin_client, jobs):
    html = admin_client.get(url("job-logs", jobs.pending.pk)).text

    assert "Nothing was logged." in html


def test_a_gone_job_has_no_log(admin_client):
    assert admin_client.get(url("job-logs", 999999)).status_code == 404


def test_masked_arguments_are_masked_in_the_log(admin_client):
    result = logging_tasks.logs_its_secret.enqueue(password="hunter2-SECRET", user="ada")
    job = Job.objects.get(pk=result.id)
    log(job, "logging in ada with password=hunter2-SECRET", "the raw secret is hunter2-SECRET")
    log(job, "api_token: tok-9 and Authorization='Bearer xyz'", first=3)

    html = admin_client.get(url("job-logs", job.pk)).text

    assert "hunter2-SECRET" not in html
    assert "tok-9" not in html and "Bearer" not in html and "xyz" not in html
    assert f"logging in ada with password={MASK}" in html
    assert f"the raw secret is {MASK}" in html


def test_a_tasks_own_masked_positions_are_masked_in_the_log(admin_client):
    result = masked_tasks.charge.enqueue("4111111111111111", 30)
    job = Job.objects.get(pk=result.id)
    log(job, "charging card 4111111111111111 for 30")

    html = admin_client.get(url("job-logs", job.pk)).text

    assert "4111111111111111" not in html
    assert f"charging card {MASK} for 30" in html


def test_the_job_page_includes_the_log_and_the_stack_button_for_a_running_job(admin_client, jobs):
    html = admin_client.get(url("job-detail", jobs.running.pk)).text

    assert url("job-logs", jobs.running.pk) in html
    assert "Show the live stack" in html


def test_a_job_not_running_has_no_stack_button(admin_client, jobs):
    html = admin_client.get(url("job-detail", jobs.finished.pk)).text

    assert url("job-logs", jobs.finished.pk) in html
    assert "Show the live stack" not in html


def test_staff_without_the_view_permission_see_no_log(viewer_client, operator_client, jobs):
    log(jobs.running, "private line")
    for client in (viewer_client, operator_client):
        page = client.get(url("job-detail", jobs.running.pk)).text
        assert url("job-logs", jobs.running.pk) not in page
        assert "Show the live stack" not in page
        assert client.get(url("job-logs", jobs.running.pk)).status_code == 403
        assert client.post(url("job-stack", jobs.running.pk)).status_code == 403
    assert not StackRequest.objects.exists()


def test_staff_with_the_view_permission_see_the_log(log_viewer_client, jobs):
    log(jobs.running, "visible line")

    assert "visible line" in log_viewer_client.get(url("job-logs", jobs.running.pk)).text
    assert log_viewer_client.post(url("job-stack", jobs.running.pk)).status_code == 302


def test_others_get_no_log(client, member_client, jobs):
    log(jobs.running, "private line")

    assert member_client.get(url("job-logs", jobs.running.pk)).status_code == 403
    assert client.get(url("job-logs", jobs.running.pk)).status_code == 302  # to the login
    assert client.post(url("job-stack", jobs.running.pk)).status_code == 302
    assert not StackRequest.objects.exists()


def test_the_log_costs_a_bounded_number_of_queries(
    admin_client, jobs, django_assert_max_num_queries
):
    log(jobs.running, *[f"line {n}" for n in range(500)])

    # session, user, the job (and its state), the lines: however many lines there are.
    with django_assert_max_num_queries(8):
        html = admin_client.get(url("job-logs", jobs.running.pk), HTTP_HX_REQUEST="true").text
    assert "line 499" in html


def test_the_log_of_a_finished_job_reads_its_last_attempt_in_one_more_query(
    admin_client, jobs, django_assert_max_num_queries
):
    log(jobs.finished, *[f"line {n}" for n in range(100)], attempt=1)

    with django_assert_max_num_queries(8):
        html = admin_client.get(url("job-logs", jobs.finished.pk), HTTP_HX_REQUEST="true").text
    assert "line 99" in html


def test_asking_for_the_stack_writes_a_request_and_waits_for_its_answer(
    admin_client, jobs, django_assert_max_num_queries
):
    with django_assert_max_num_queries(9):
        html = admin_client.post(url("job-stack", jobs.running.pk), HTTP_HX_REQUEST="true").text

    (asked,) = StackRequest.objects.all()
    assert asked.job_id == jobs.running.pk and asked.answered_at is None
    assert url("job-stack-answer", jobs.running.pk, asked.pk) in html
    assert "Asking the worker" in html


def test_a_stack_answer_shows_each_frame_with_file_and_line(admin_client, jobs):
    asked = StackRequest.objects.create(job_id=jobs.running.pk)
    frame = {"file": "/app/tasks.py", "line": 42, "function": "crawl", "code": "time.sleep(1)"}
    StackRequest.objects.filter(pk=asked.pk).update(
        answered_at=timezone.now(),
        answer={"frames": [frame], "in_c": True, "note": "In C code, called from the last line."},
    )

    html = admin_client.get(
        url("job-stack-answer", jobs.running.pk, asked.pk), HTTP_HX_REQUEST="true"
    ).text

    assert "/app/tasks.py:42" in html
    assert "crawl" in html and "time.sleep(1)" in html
    assert "In C code" in html
    assert "hx-trigger" not in html.split("</form>", 1)[1]  # no more polling


def test_an_unanswered_request_stops_waiting_after_a_while(admin_client, jobs):
    asked = StackRequest.objects.create(
        job_id=jobs.running.pk, requested_at=timezone.now() - timedelta(seconds=30)
    )

    html = admin_client.get(url("job-stack-answer", jobs.running.pk, asked.pk)).text

    assert "did not answer in time" in html


def test_a_job_not_running_gets_no_stack_request(admin_client, jobs):
    html = admin_client.post(url("job-stack", jobs.finished.pk), HTTP_HX_REQUEST="true").text

    assert "not running" in html
    assert not StackRequest.objects.exists()


def test_asking_for_the_stack_takes_a_post(admin_client, jobs):
    assert admin_client.get(url("job-stack", jobs.running.pk)).status_code == 405


def test_a_stack_request_of_another_job_is_not_shown(admin_client, jobs):
    asked = StackRequest.objects.create(job_id=jobs.running.pk)

    html = admin_client.get(url("job-stack-answer", jobs.finished.pk, asked.pk)).text

    assert "Asking the worker" not in html
