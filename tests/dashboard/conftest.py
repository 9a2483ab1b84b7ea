"""Fixtures for the dashboard's view tests: users of each kind, jobs in every state, failures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from steady_queue.models import FailedExecution, Job, Process, ReadyExecution
from steady_queue.testing import run_ready_jobs
from tests.tasks import dashboard as tasks


@pytest.fixture
def admin_client(db) -> Client:
    """A superuser: may see and act."""
    user = User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator_client(db) -> Client:
    """Staff with the dashboard permission only."""
    user = User.objects.create_user("operator", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="manage_jobs"))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def viewer_client(db) -> Client:
    """Staff without the dashboard permission: may look, not act."""
    client = Client()
    client.force_login(User.objects.create_user("viewer", password="pw", is_staff=True))
    return client


@pytest.fixture
def member_client(db) -> Client:
    """A logged-in user who is not staff."""
    client = Client()
    client.force_login(User.objects.create_user("member", password="pw"))
    return client


@pytest.fixture
def htmx(admin_client) -> Client:
    """The superuser's client, sending every request as htmx does."""
    admin_client.defaults["HTTP_HX_REQUEST"] = "true"
    return admin_client


@dataclass
class Jobs:
    pending: Job
    scheduled: Job
    running: Job
    blocked: Job
    failed: Job
    finished: Job
    worker: Process


def make_jobs() -> Jobs:
    """Put one job in each state through the engine itself."""
    finished = _job(tasks.record.enqueue(1, account_id=7))
    failed = _job(tasks.fail.enqueue("it broke"))
    run_ready_jobs()
    scheduled = _job(tasks.record.using(run_after=timedelta(hours=1)).enqueue("later"))
    _job(tasks.limited.enqueue(42))
    blocked = _job(tasks.limited.enqueue(42))
    worker = Process.objects.create(kind="Worker", name="worker-1", pid=4242, hostname="box")
    running = _job(tasks.crawl.enqueue(steps=10))
    ReadyExecution.claim(["*"], 10, worker)
    Job.objects.filter(pk=running.pk).update(progress={"current": 3, "total": 10, "message": "p3"})
    pending = _job(tasks.record.using(queue_name="low").enqueue(42))
    return Jobs(pending, scheduled, running, blocked, failed, finished, worker)


@pytest.fixture
def jobs(db) -> Jobs:
    return make_jobs()


def _job(result) -> Job:
    return Job.objects.get(pk=result.id)


@pytest.fixture
def failures(db) -> tuple[list[int], int]:
    """Three recent failures and one from two days ago; return (recent ids, old id)."""
    results = [tasks.fail.enqueue(f"error {n}") for n in range(4)]
    run_ready_jobs()
    old = int(results[0].id)
    FailedExecution.objects.filter(job_id=old).update(created_at=timezone.now() - timedelta(days=2))
    return [int(r.id) for r in results[1:]], old


def failed_ids() -> set[int]:
    return set(Job.objects.filter(failed_execution__isnull=False).values_list("pk", flat=True))
