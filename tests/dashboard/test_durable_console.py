"""Durable jobs on the console: a job's steps (masked) and what it waits for, the "Send signal"
form (checked, confirmed, audited, behind ``edit_jobs``), and the Waits page."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job, JobSignal, JobStep
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from steady_queue_dashboard.adapter.durable import SIGNAL_PAYLOAD_LIMIT
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import durable_console as tasks
from tests.tasks import groups

from .durable_states import (
    NO_DEADLINE,
    job_of,
    record_step,
    signalled,
    sleeping,
    waiting_for_signal,
)

pytestmark = pytest.mark.django_db

WAITS = reverse("steady_queue_dashboard:wait-list")
# The job page: session, user, the job with its executions, its attempts' records, its
# durable records (a scheduled job: whether it sleeps, 1 more).
JOB_PAGE_QUERIES = 5
# Session, user, the page of jobs, the steps done by its rows, the next deadline, the two
# tab counts.
WAITS_QUERIES = 7


def url(name: str, pk: int) -> str:
    return reverse(f"steady_queue_dashboard:job-{name}", args=[pk])


@pytest.fixture
def editor(db) -> Client:
    """Staff with the edit permission only (not manage_jobs)."""
    user = User.objects.create_user("editor", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="edit_jobs"))
    client = Client()
    client.force_login(user)
    return client


def onboarding(user_id: int = 7, deadline=timedelta(days=7)) -> Job:
    """An onboarding job that did its two steps and waits for "confirmed"."""
    job = job_of(tasks.onboard.enqueue(user_id, pin="4321"))
    record_step(job, "create-account", {"id": user_id, "password": "hunter2"})
    record_step(job, "welcome-mail", {"sent_to": "u@example.com", "pin": "4321"})
    return waiting_for_signal(job, "confirmed", deadline)


def napping(hours: int = 2) -> Job:
    job = job_of(tasks.nap.enqueue(hours))
    record_step(job, "before", 1)
    return sleeping(job, timedelta(hours=hours))


def token_of(response) -> str:
    found = re.search(r'name="confirm" value="([^"]+)"', response.content.decode())
    assert found, response.content.decode()
    return found.group(1)


def text(response) -> str:
    return response.content.decode()


# The job page ---------------------------------------------------------------------------


def test_a_job_without_durable_calls_has_no_durable_section(admin_client, jobs):
    for job in (jobs.pending, jobs.scheduled, jobs.finished, jobs.failed):
        page = text(admin_client.get(url("detail", job.pk)))
        assert 'id="durable"' not in page and 'id="send-signal"' not in page


def test_the_job_page_lists_the_steps_masked_and_the_awaited_signal(
    admin_client, django_assert_max_num_queries
):
    job = onboarding()

    with django_assert_max_num_queries(JOB_PAGE_QUERIES):
        response = admin_client.get(url("detail", job.pk))

    page = text(response)
    steps = re.search(r'<table class="table" id="durable-steps">(.*?)</table>', page, re.S)
    assert steps, page
    assert re.findall(r'<td class="mono">([^<]+)</td>', steps.group(1)) == [
        "create-account",
        "welcome-mail",
        "signal confirmed",
    ]
    # The step's secret and the task's masked parameter never reach the page.
    assert "hunter2" not in page and "4321" not in page
    assert "&quot;password&quot;: &quot;[masked]&quot;" in steps.group(1)
    assert "&quot;pin&quot;: &quot;[masked]&quot;" in steps.group(1)
    wait = re.search(r'<p class="durable-wait" id="durable-wait">(.*?)</p>', page, re.S).group(1)
    assert 'Waiting for signal <strong class="mono">confirmed</strong> until' in wait
    deadline = job.waiting_execution.signal_deadline
    assert f'datetime="{deadline.isoformat()}"' in wait
    # The timeline says what it waits for, not "upstream steps".
    assert "Waiting for signal confirmed" in page and "upstream" not in page
    assert 'id="send-signal"' in page and 'value="confirmed"' in page


def test_a_wait_without_deadline_says_so(admin_client):
    job = waiting_for_signal(job_of(tasks.patient.enqueue()), "go", NO_DEADLINE)

    page = text(admin_client.get(url("detail", job.pk)))

    assert 'Waiting for signal <strong class="mono">go</strong>, with no deadline' in page
    assert re.search(r'<td class="mono">signal go</td><td>—</td><td[^>]*>waiting</td>', page)


def test_a_sleeping_job_says_until_when(admin_client, django_assert_max_num_queries):
    job = napping()

    with django_assert_max_num_queries(JOB_PAGE_QUERIES + 1):
        page = text(admin_client.get(url("detail", job.pk)))

    wake = job.scheduled_execution.scheduled_at
    assert re.search(rf'Sleeping until <time datetime="{re.escape(wake.isoformat())}"', page)
    assert "sleep 1" in page and "until " in page


def test_the_job_page_fragment_renders_for_htmx(admin_client):
    job = onboarding()

    page = text(admin_client.get(url("detail", job.pk), HTTP_HX_REQUEST="true"))

    assert 'id="durable-steps"' in page and "<html" not in page


def test_only_editors_see_the_send_signal_form(operator_client, viewer_client, editor):
    job = onboarding()
    for client in (operator_client, viewer_client):
        page = text(client.get(url("detail", job.pk)))
        assert 'id="durable-steps"' in page and 'id="send-signal"' not in page
    assert 'id="send-signal"' in text(editor.get(url("detail", job.pk)))


# Send signal: the form's checks ----------------------------------------------------------


def test_the_form_offers_the_awaited_signal(editor, django_assert_max_num_queries):
    job = onboarding()

    with django_assert_max_num_queries(6):
        response = editor.get(url("signal", job.pk))

    assert response.status_code == 200
    assert 'name="name"' in text(response) and 'value="confirmed"' in text(response)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"name": "confirmed", "payload": "{by: email}"}, "The payload is not valid JSON"),
        ({"name": "confirmed", "payload": "[1, 2"}, "The payload is not valid JSON"),
        ({"name": "", "payload": "{}"}, "Name the signal, as the task waits for it."),
        ({"name": "x" * 201, "payload": "{}"}, "at most 200 characters"),
        ({"name": "confirmed", "payload": "NaN"}, "A signal&#x27;s payload must be JSON"),
        ({"name": "confirmed", "payload": "x" * (5 * 65536)}, "a signal carries at most 64.0"),
    ],
)
def test_bad_input_is_a_form_error_and_nothing_is_written(editor, fields, error):
    job = onboarding()

    response = editor.post(url("signal", job.pk), fields)

    assert response.status_code == 200
    assert error in text(response)
    assert 'name="confirm"' not in text(response)
    assert not JobSignal.objects.exists() and not AuditEntry.objects.exists()


def test_a_payload_over_64_kb_is_refused(editor):
    job = onboarding()
    fits = json.dumps("x" * (SIGNAL_PAYLOAD_LIMIT - 2))
    too_large = json.dumps("x" * (SIGNAL_PAYLOAD_LIMIT - 1))

    assert 'name="confirm"' in text(
        editor.post(url("signal", job.pk), {"name": "confirmed", "payload": fits})
    )
    response = editor.post(url("signal", job.pk), {"name": "confirmed", "payload": too_large})

    assert f"at most {SIGNAL_PAYLOAD_LIMIT} bytes as JSON, not {SIGNAL_PAYLOAD_LIMIT + 1}" in text(
        response
    )
    assert 'name="confirm"' not in text(response)
    assert not JobSignal.objects.exists()


def test_a_job_that_ended_takes_no_signal(editor, jobs):
    for job in (jobs.finished, jobs.failed):
        response = editor.post(url("signal", job.pk), {"name": "go", "payload": "{}"})
        assert response.status_code == 200
        assert f"Job {job.pk} has ended: it takes no more signals." in text(response)
    assert not JobSignal.objects.exists() and not AuditEntry.objects.exists()


def test_a_second_signal_of_one_name_is_refused(editor):
    job = job_of(tasks.patient.enqueue())
    signalled(job, "go", 1)

    response = editor.post(url("signal", job.pk), {"name": "go", "payload": "2"})

    assert "already received a signal &#x27;go&#x27;" in text(response)
    assert JobSignal.objects.get().payload == 1


def test_a_wait_that_is_over_takes_no_signal_of_its_name(editor):
    job = job_of(tasks.patient.enqueue())
    waiting_for_signal(job, "go", timedelta(seconds=-1))
    JobStep.objects.filter(job=job).update(result={"timed_out": True}, completed_at=timezone.now())

    response = editor.post(url("signal", job.pk), {"name": "go", "payload": "1"})

    assert "that wait is over (delivered or timed out)" in text(response)
    assert not JobSignal.objects.exists()


def test_a_job_that_is_gone_is_404(editor):
    assert editor.get(url("signal", 999_999)).status_code == 404
    assert editor.post(url("signal", 999_999), {"name": "go"}).status_code == 404


# Send signal: confirmation, delivery, audit ---------------------------------------------


def test_the_review_shows_the_payload_masked_and_writes_nothing(editor):
    job = onboarding()
    fields = {"name": "confirmed", "payload": '{"by": "email", "password": "p-1"}'}

    review = editor.post(url("signal", job.pk), fields)

    page = text(review)
    shown = re.search(r'<table class="table" id="signal-review">(.*?)</table>', page, re.S).group(1)
    assert "&quot;password&quot;: &quot;[masked]&quot;" in shown and "p-1" not in shown
    assert "Send this signal?" in page and token_of(review)
    assert not JobSignal.objects.exists() and not AuditEntry.objects.exists()


def test_a_confirmation_for_another_payload_sends_nothing(editor):
    job = onboarding()
    review = editor.post(url("signal", job.pk), {"name": "confirmed", "payload": '{"n": 1}'})

    changed = {"name": "confirmed", "payload": '{"n": 2}', "confirm": token_of(review)}
    response = editor.post(url("signal", job.pk), changed)

    assert response.status_code == 200
    assert 'id="signal-stale"' in text(response)
    assert not JobSignal.objects.exists() and not AuditEntry.objects.exists()


def test_a_confirmed_signal_is_sent_and_audited(editor, django_assert_max_num_queries):
    job = onboarding()
    fields = {"name": "confirmed", "payload": '{"by": "email", "secret": "s-9"}'}
    review = editor.post(url("signal", job.pk), fields)

    with django_assert_max_num_queries(25):
        done = editor.post(url("signal", job.pk), {**fields, "confirm": token_of(review)})

    assert done.status_code == 302 and done["Location"] == url("detail", job.pk)
    signal = JobSignal.objects.get(job=job)
    assert (signal.name, signal.payload) == ("confirmed", {"by": "email", "secret": "s-9"})
    assert Job.objects.get(pk=job.pk).state != "waiting"  # delivered: due again
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target) == ("editor", "signal", f"job {job.pk}")
    assert entry.succeeded and entry.link == url("detail", job.pk)
    assert entry.details["signal"] == "confirmed"
    assert entry.details["payload"] == {"by": "email", "secret": "[masked]"}
    assert entry.details["job"] == job.pk and entry.details["task"] == job.task_path


def test_a_job_that_ended_after_the_review_gets_nothing(editor):
    job = onboarding()
    fields = {"name": "confirmed", "payload": "{}"}
    review = editor.post(url("signal", job.pk), fields)
    Job.objects.get(pk=job.pk).discard()

    response = editor.post(url("signal", job.pk), {**fields, "confirm": token_of(review)})

    assert response.status_code == 404
    assert not JobSignal.objects.exists() and not AuditEntry.objects.exists()


# Send signal: who may -------------------------------------------------------------------


def test_only_staff_with_the_edit_permission_may_send(operator_client, viewer_client, editor):
    job = onboarding()
    review = editor.post(url("signal", job.pk), {"name": "confirmed", "payload": "{}"})
    confirmed = {"name": "confirmed", "payload": "{}", "confirm": token_of(review)}

    for refused in (operator_client, viewer_client):
        assert refused.get(url("signal", job.pk)).status_code == 403
        assert refused.post(url("signal", job.pk), confirmed).status_code == 403
    anonymous = Client().post(url("signal", job.pk), confirmed)

    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    assert not JobSignal.objects.exists() and not AuditEntry.objects.exists()
    assert Job.objects.with_execution().get(pk=job.pk).state == "waiting"


# The Waits page --------------------------------------------------------------------------


def workflow_waiting_step() -> Job:
    """A workflow step waiting for its upstream step: waiting, but not for a signal."""
    wf = Workflow("two steps")
    first = wf.add(groups.step, args=(1,), name="first")
    wf.add(groups.step, args=(2,), after=[first], name="second")
    wf.enqueue()
    return Job.objects.get(waiting_execution__isnull=False, waiting_execution__signal_name="")


def test_the_waits_page_without_durable_jobs(admin_client, jobs, django_assert_max_num_queries):
    workflow_waiting_step()

    for kind in ("signal", "sleep"):
        with django_assert_max_num_queries(WAITS_QUERIES):
            response = admin_client.get(WAITS, {"kind": kind})
        assert response.status_code == 200
        assert 'id="wait-row-' not in text(response)
    assert "No job is waiting for a signal." in text(admin_client.get(WAITS))
    assert "No job is sleeping." in text(admin_client.get(WAITS, {"kind": "sleep"}))


def test_signal_waits_list_their_signal_and_deadline_apart_from_workflow_steps(admin_client):
    step = workflow_waiting_step()
    soon, later = onboarding(1, timedelta(hours=1)), onboarding(2, timedelta(days=3))
    forever = waiting_for_signal(job_of(tasks.patient.enqueue()), "go", NO_DEADLINE)
    napping()

    page = text(admin_client.get(WAITS))

    rows = re.findall(r'<tr id="wait-row-(\d+)">', page)
    assert rows == [str(soon.pk), str(later.pk), str(forever.pk)]
    assert str(step.pk) not in rows
    tabs = re.findall(r'>([^<>]+) <span class="count">(\d+)</span>', page)
    assert tabs == [("Waiting for a signal", "3"), ("Sleeping", "1")]
    deadline = soon.waiting_execution.signal_deadline.isoformat()
    assert re.search(rf'Next deadline: <time datetime="{re.escape(deadline)}"', page)
    assert f'href="{url("detail", soon.pk)}">#{soon.pk}</a>' in page
    assert re.search(r'data-label="Deadline"><span class="muted">none</span>', page)


def test_sleeping_jobs_soonest_wake_first(admin_client):
    late, early = napping(5), napping(1)
    onboarding()

    page = text(admin_client.get(WAITS, {"kind": "sleep"}))

    assert re.findall(r'<tr id="wait-row-(\d+)">', page) == [str(early.pk), str(late.pk)]
    wake = early.scheduled_execution.scheduled_at.isoformat()
    assert f'datetime="{wake}"' in page


def test_the_waits_page_filters_by_task(admin_client):
    onboarding()
    patient = waiting_for_signal(job_of(tasks.patient.enqueue()), "go")

    page = text(admin_client.get(WAITS, {"task": "tests.tasks.durable_console.patient"}))

    assert re.findall(r'<tr id="wait-row-(\d+)">', page) == [str(patient.pk)]
    for odd in ("no.such.task", "a\x00b", "x" * 400):
        none = admin_client.get(WAITS, {"kind": "sleep", "task": odd})
        assert none.status_code == 200
        assert "No job of this task is sleeping." in text(none)
    assert text(admin_client.get(WAITS, {"kind": "nonsense"})).count('id="wait-row-') == 2


def test_the_waits_page_pages_by_keyset_in_the_same_queries(
    admin_client, django_assert_max_num_queries
):
    waiters = [waiting_for_signal(job_of(tasks.patient.enqueue()), "go") for _ in range(55)]

    with django_assert_max_num_queries(WAITS_QUERIES):
        first = admin_client.get(WAITS)
    following = re.search(r'href="/[^"]*page_after=([^"&]+)"[^>]*rel="next"', text(first))
    assert following, text(first)
    with django_assert_max_num_queries(WAITS_QUERIES):
        second = admin_client.get(WAITS, {"kind": "signal", "page_after": following.group(1)})

    seen = re.findall(r'<tr id="wait-row-(\d+)">', text(first) + text(second))
    assert seen == [str(job.pk) for job in waiters]


def test_the_waits_fragment_renders_for_htmx(admin_client):
    onboarding()

    page = text(admin_client.get(WAITS, HTTP_HX_REQUEST="true"))

    assert page.startswith('<div id="wait-table"') and 'hx-swap-oob="true"' in page


def test_the_waits_page_is_in_the_nav_and_linked_from_the_lists(admin_client):
    nav = reverse("steady_queue_dashboard:overview")
    assert f'href="{WAITS}"' in text(admin_client.get(nav))
    for status in ("waiting", "scheduled"):
        listing = text(admin_client.get(reverse("steady_queue_dashboard:job-list", args=[status])))
        assert f'href="{WAITS}' in listing


def test_the_waiting_list_tells_a_signal_wait_from_a_workflow_step(admin_client):
    step = workflow_waiting_step()
    job = onboarding()

    page = text(admin_client.get(reverse("steady_queue_dashboard:job-list", args=["waiting"])))

    row = re.search(rf'<tr id="job-row-{job.pk}">(.*?)</tr>', page, re.S).group(1)
    assert 'signal <span class="mono">confirmed</span>' in row
    other = re.search(rf'<tr id="job-row-{step.pk}">(.*?)</tr>', page, re.S).group(1)
    assert "1 step" in other and "signal" not in other


# Through the engine itself ---------------------------------------------------------------


def test_a_real_run_shows_its_steps_and_the_signal_wakes_it(editor, admin_client):
    """The states built above are the engine's: a real run, then a signal from the form."""
    result = tasks.onboard.enqueue(9, pin="5555")
    run_ready_jobs()
    job = Job.objects.with_execution().get(pk=result.id)
    assert job.state == "waiting"

    page = text(admin_client.get(url("detail", job.pk)))
    assert re.findall(r'<td class="mono">([^<]+)</td>', page)[:3] == [
        "create-account",
        "welcome-mail",
        "signal confirmed",
    ]
    assert "hunter2" not in page and "5555" not in page
    assert f'<tr id="wait-row-{job.pk}">' in text(admin_client.get(WAITS))

    fields = {"name": "confirmed", "payload": '{"by": "console"}'}
    review = editor.post(url("signal", job.pk), fields)
    editor.post(url("signal", job.pk), {**fields, "confirm": token_of(review)})
    run_ready_jobs()

    finished = Job.objects.get(pk=job.pk)
    assert finished.finished_at is not None
    assert finished.return_value == {"account": 9, "answer": {"by": "console"}}
    page = text(admin_client.get(url("detail", job.pk)))
    assert "signal confirmed" in page and "&quot;by&quot;: &quot;console&quot;" in page


def test_a_real_sleep_is_on_the_waits_page_with_its_wake_time(admin_client):
    result = tasks.nap.enqueue(3)
    run_ready_jobs()
    job = Job.objects.with_execution().get(pk=result.id)
    wake = job.scheduled_execution.scheduled_at

    page = text(admin_client.get(WAITS, {"kind": "sleep"}))

    row = re.search(rf'<tr id="wait-row-{job.pk}">(.*?)</tr>', page, re.S).group(1)
    assert f'datetime="{wake.isoformat()}"' in row
    assert re.search(r'data-label="Steps done">1</td>', row)
    assert "Sleeping until" in text(admin_client.get(url("detail", job.pk)))
