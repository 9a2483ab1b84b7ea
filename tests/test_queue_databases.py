"""A backend with OPTIONS["database"] keeps its jobs in that queue database, and only there."""

from __future__ import annotations

import pytest
from django.core import checks

from steady_queue import db
from steady_queue.backend import enqueue_all
from steady_queue.compat import task_backends
from steady_queue.models import Job
from steady_queue.routers import SteadyQueueRouter, check_queue_database
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.tasks import billing

pytestmark = pytest.mark.django_db(databases=["default", "billing"])


def jobs_in(alias: str) -> list[str]:
    return list(Job.objects.db_manager(alias).order_by("pk").values_list("task_path", flat=True))


def test_a_backend_enqueues_into_its_own_database_and_reads_results_there():
    result = billing.invoice.enqueue(7)
    tasks.noop.enqueue()
    assert jobs_in("billing") == ["tests.tasks.billing.invoice"]
    assert jobs_in("default") == ["tests.tasks.noop"]
    assert task_backends["billing"].database == "billing"
    assert task_backends["billing"].get_result(result.id).task.func is billing.invoice.func


def test_a_bulk_enqueue_across_backends_puts_each_job_in_its_database():
    enqueue_all([(billing.invoice, [1], {}), (tasks.noop, [], {}), (billing.invoice, [2], {})])
    assert jobs_in("billing") == ["tests.tasks.billing.invoice"] * 2
    assert jobs_in("default") == ["tests.tasks.noop"]


def test_workers_of_a_database_run_its_jobs_only():
    billing.invoice.enqueue(7)
    tasks.noop.enqueue()
    with db.using_alias("billing"):
        [ran] = run_ready_jobs()
    assert ran.return_value == "invoice 7"
    assert Job.objects.db_manager("default").get().finished_at is None


def test_the_router_migrates_the_queue_tables_on_every_queue_database(settings):
    router = SteadyQueueRouter()
    assert db.queue_aliases() == {"default", "billing"}
    assert router.allow_migrate("billing", "steady_queue") is True
    assert router.allow_migrate("billing", "auth") is False  # kept out of a queue database
    assert router.allow_migrate("default", "auth") is None


def test_an_unknown_database_option_is_a_check_error(settings):
    settings.TASKS = {
        **settings.TASKS,
        "billing": {**settings.TASKS["billing"], "OPTIONS": {"database": "nowhere"}},
    }
    [error] = [m for m in check_queue_database() if m.level >= checks.ERROR]
    assert error.id == "steady_queue.E213"
    assert "TASKS['billing']['OPTIONS']['database'] is 'nowhere'" in error.msg
