"""User data is shown as text: arguments, errors, tracebacks and queue names are escaped."""

from __future__ import annotations

import pytest
from django.urls import reverse

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks

pytestmark = pytest.mark.django_db

EVIL = "<script>alert('owned')</script>"


@pytest.fixture
def evil_jobs(db) -> dict[str, Job]:
    failed = tasks.fail.enqueue(EVIL)
    finished = tasks.record.enqueue(EVIL, note=EVIL)
    run_ready_jobs()
    queued = Job.enqueue_all(
        [Job(queue_name=EVIL, task_path="tests.tasks.dashboard.record", backend="secondary")]
    )[0]
    return {
        "failed": Job.objects.get(pk=failed.id),
        "finished": Job.objects.get(pk=finished.id),
        "queued": queued,
    }


def pages(evil_jobs) -> list[str]:
    return [
        reverse("steady_queue_dashboard:job-list", args=["failed"]),
        reverse("steady_queue_dashboard:job-list", args=["finished"]),
        reverse("steady_queue_dashboard:job-list", args=["ready"]),
        reverse("steady_queue_dashboard:job-detail", args=[evil_jobs["failed"].pk]),
        reverse("steady_queue_dashboard:job-detail", args=[evil_jobs["finished"].pk]),
        reverse("steady_queue_dashboard:queue-list"),
        reverse("steady_queue_dashboard:queue-detail", args=[EVIL]),
        reverse("steady_queue_dashboard:overview"),
        reverse("steady_queue_dashboard:job-list", args=["failed"]) + "?args=" + EVIL,
    ]


@pytest.mark.parametrize("index", range(9))
def test_user_data_is_escaped(admin_client, evil_jobs, index):
    html = admin_client.get(pages(evil_jobs)[index]).content.decode()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(" in html


def test_the_traceback_is_escaped_text(admin_client, evil_jobs):
    url = reverse("steady_queue_dashboard:job-detail", args=[evil_jobs["failed"].pk])
    html = admin_client.get(url).content.decode()
    assert "RuntimeError: &lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in html


def test_action_messages_are_escaped(admin_client, evil_jobs):
    response = admin_client.post(
        reverse("steady_queue_dashboard:queue-pause", args=[EVIL]), follow=True
    )
    html = response.content.decode()
    assert "<script>alert" not in html and "Queue &lt;script&gt;" in html
