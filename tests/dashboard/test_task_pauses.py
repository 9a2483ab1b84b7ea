"""Pausing and resuming a task from the console: the Tasks page, a job's page and the
overview; two steps (a question, then its signed confirmation), audited, permission-checked,
bad input answered with a message, never a 500; bounded queries."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from steady_queue.models import Job, PausedExecution, TaskPause, TaskRollup
from steady_queue.models.task_rollup import hour_of
from steady_queue.pauses import pause_task
from steady_queue_dashboard.models import AuditEntry
from tests import tasks

ECHO = "tests.tasks.echo"


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def token_of(html: str) -> str:
    return re.search(r'name="confirm" value="([^"]+)"', html).group(1)


@pytest.fixture
def echoes(db) -> list[int]:
    return [tasks.echo.enqueue(n).id for n in range(3)] + [tasks.add.enqueue(1, 2).id]


def test_pausing_asks_first_then_pauses_on_the_signed_confirmation(admin_client, echoes):
    question = admin_client.post(url("task-pause", ECHO))

    html = question.content.decode()
    assert question.status_code == 200
    assert f'Pause task <span class="mono">{ECHO}</span>?' in html
    assert "its 3 ready jobs and every job enqueued meanwhile wait as paused" in html
    assert not TaskPause.objects.exists() and not AuditEntry.objects.exists()

    done = admin_client.post(url("task-pause", ECHO), {"confirm": token_of(html)}, follow=True)

    assert "Task tests.tasks.echo is paused: 3 jobs wait" in done.content.decode()
    assert list(TaskPause.objects.values_list("task_path", flat=True)) == [ECHO]
    assert PausedExecution.objects.count() == 3
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.target, entry.affected, entry.succeeded) == (
        "pause",
        f"task {ECHO}",
        3,
        True,
    )


def test_a_token_for_one_task_does_not_pause_another(admin_client, echoes):
    html = admin_client.post(url("task-pause", ECHO)).content.decode()
    again = admin_client.post(url("task-pause", "tests.tasks.add"), {"confirm": token_of(html)})
    assert "did not match" in again.content.decode()
    assert not TaskPause.objects.exists() and not AuditEntry.objects.exists()


def test_resuming_asks_first_then_resumes(admin_client, echoes):
    pause_task(ECHO)
    html = admin_client.post(url("task-resume", ECHO)).content.decode()
    assert "run in their original order" in html and TaskPause.objects.exists()

    admin_client.post(url("task-resume", ECHO), {"confirm": token_of(html)})

    assert not TaskPause.objects.exists()
    assert {Job.objects.get(pk=pk).state for pk in echoes} == {"ready"}
    assert AuditEntry.objects.get().action == "resume"


@pytest.mark.parametrize(
    "path", ["tests.tasks.nothing", "echo", "tests.tasks.CALLS", "a" * 300, "a.b\x00c"]
)
def test_a_path_that_is_no_task_gets_a_message_and_changes_nothing(admin_client, echoes, path):
    for name in ("task-pause", "task-resume"):
        response = admin_client.post(url(name, path.replace("\x00", "%00")), follow=True)
        assert response.status_code in (200, 404)
    assert not TaskPause.objects.exists() and not AuditEntry.objects.exists()
    assert not PausedExecution.objects.exists()


def test_htmx_asks_in_the_messages_area(admin_client, echoes):
    response = admin_client.post(url("task-pause", ECHO), HTTP_HX_REQUEST="true")
    assert response["HX-Retarget"] == "#sq-messages"
    assert 'id="sq-confirm-form"' in response.content.decode()


def test_staff_without_the_permission_cannot_pause_or_resume(viewer_client, echoes):
    assert viewer_client.post(url("task-pause", ECHO)).status_code == 403
    pause_task(ECHO)
    assert viewer_client.post(url("task-resume", ECHO)).status_code == 403
    assert TaskPause.objects.count() == 1


def test_the_tasks_page_offers_pause_and_lists_paused_tasks_in_bounded_queries(
    admin_client, echoes, django_assert_max_num_queries
):
    for task in (ECHO, "tests.tasks.add"):
        TaskRollup.objects.create(
            task_path=task, queue_name="default", period=hour_of(timezone.now()), runs=1
        )
    pause_task(ECHO)
    with django_assert_max_num_queries(8):
        html = admin_client.get(url("tasks"), {"window": "day"}).content.decode()
    assert "Paused tasks" in html
    assert f'data-task="{ECHO}">Resume task' in html
    assert 'data-task="tests.tasks.add">Pause task' in html


def test_a_job_page_shows_its_task_pause_and_the_button(admin_client, echoes):
    before = admin_client.get(url("job-detail", echoes[0])).content.decode()
    assert f'data-task="{ECHO}">Pause task' in before
    pause_task(ECHO)
    after = admin_client.get(url("job-detail", echoes[0])).content.decode()
    assert "task paused" in after and f'data-task="{ECHO}">Resume task' in after


def test_the_overview_lists_paused_tasks(admin_client, echoes, django_assert_max_num_queries):
    assert "Paused tasks" not in admin_client.get(url("overview")).content.decode()
    pause_task(ECHO)
    html = admin_client.get(url("overview")).content.decode()
    assert "Paused tasks" in html and ECHO in html
    assert url("job-list", "paused") in html


def test_the_paused_list_shows_each_waiting_job_with_its_pause(
    admin_client, echoes, django_assert_max_num_queries
):
    pause_task(ECHO)
    with django_assert_max_num_queries(20):
        response = admin_client.get(url("job-list", "paused"))
    html = response.content.decode()
    assert response.status_code == 200
    rows = re.findall(r'<tr id="job-row-(\d+)"', html)
    assert sorted(map(int, rows)) == sorted(map(int, echoes[:3]))  # the echoes, not the add
    assert "Paused for" in html
