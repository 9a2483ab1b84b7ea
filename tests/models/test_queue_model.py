"""QueueModel: every queue table is read, written and locked on ``steady_queue.database``.

With the queue tables on a "queue" alias (its own connection to the test database),
each test captures the queries of both aliases and asserts that the queue's went to
"queue" and nothing went to "default" — with the project's router and without it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test.utils import CaptureQueriesContext

from steady_queue import db
from steady_queue.models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from tests.queue_database import DATABASES, captured, queue_alias, queue_database, sql

REPO = Path(__file__).resolve().parents[2]
ROUTER = "steady_queue.routers.SteadyQueueRouter"


@pytest.fixture(scope="module", autouse=True)
def _queue_alias(django_db_setup):
    with queue_alias():
        yield


@pytest.fixture(params=["router", "no router"])
def queue(request, settings):
    """The "queue" alias, with the project's router installed or not.

    QueueModel must not need the router: it routes through its manager and save().
    """
    if request.param == "router":
        settings.DATABASE_ROUTERS = [ROUTER]
    with queue_database() as alias:
        yield alias


def new_job(**values) -> Job:
    return Job(queue_name="default", task_path="tests.tasks.record", **values)


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_new_rows_reads_updates_and_deletes_go_to_the_queue_database(queue):
    with captured() as (on_queue, on_default):
        job = new_job()
        job.save()
        assert Job.objects.filter(pk=job.pk).exists()
        fetched = Job.objects.get(pk=job.pk)
        fetched.priority = 5
        fetched.save(update_fields=["priority"])
        assert Job.objects.filter(pk=job.pk).update(progress={"current": 1}) == 1
        Pause.objects.create(queue_name="low")
        Pause.objects.get(queue_name="low").delete()
        fetched.delete()
        assert not Job.objects.filter(pk=job.pk).exists()
    assert (job._state.db, fetched._state.db) == (queue, queue)
    assert on_default.captured_queries == []
    assert len(on_queue.captured_queries) >= 9


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_related_lookups_go_to_the_queue_database(queue):
    process = Process.objects.create(kind="Worker", name="worker", pid=1)
    claimed_job, ready_job = new_job(), new_job()
    claimed_job.save()
    ready_job.save()
    ClaimedExecution.objects.create(job=claimed_job, process=process)
    ReadyExecution.objects.create(job=ready_job, queue_name="default")
    job = Job.objects.get(pk=ready_job.pk)
    worker = Process.objects.get(pk=process.pk)
    claim = ClaimedExecution.objects.get(pk=claimed_job.pk)
    with captured() as (on_queue, on_default):
        assert job.ready_execution.job_id == ready_job.pk
        assert list(worker.claimed_executions.all()) == [claim]
        assert claim.job.pk == claimed_job.pk
        assert claim.process.pk == process.pk
        assert worker.claimed_executions.count() == 1
        assert list(Job.objects.filter(pk=job.pk).with_execution()) == [job]
    assert on_default.captured_queries == []
    assert len(on_queue.captured_queries) == 6


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_locked_reads_go_to_the_queue_database(queue):
    job = new_job()
    job.save()
    ReadyExecution.objects.create(job=job, queue_name="default")
    with captured() as (on_queue, on_default), db.atomic():
        [locked] = ReadyExecution.objects.filter(queue_name="default").locked()
        assert Job.objects.filter(pk=job.pk).locked(skip_locked=False).get() == job
    assert locked.job_id == job.pk
    assert on_default.captured_queries == []
    assert len([q for q in sql(on_queue) if q.startswith("SELECT")]) == 2


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_db_manager_still_targets_another_alias_on_purpose(queue):
    with captured() as (on_queue, on_default):
        assert not Job.objects.db_manager("default").filter(pk=0).exists()
    assert len(on_default.captured_queries) == 1
    assert on_queue.captured_queries == []


@pytest.mark.django_db
def test_locked_skips_locked_rows_where_the_database_can():
    """SKIP LOCKED on PostgreSQL and MariaDB 10.6+; SQLite has no row locks at all."""
    job = new_job()
    job.save()
    connection = db.connection()
    with CaptureQueriesContext(connection) as queries, db.atomic():
        list(Job.objects.filter(pk=job.pk).locked())
        list(Job.objects.filter(pk=job.pk).locked(skip_locked=False))
    skipping, waiting = [q for q in sql(queries) if q.startswith("SELECT")]
    features = connection.features
    if not features.has_select_for_update:
        # Django leaves the clause out where the database cannot lock rows (SQLite):
        # its writes are serialised by the database lock instead.
        assert connection.vendor == "sqlite"
        assert "FOR UPDATE" not in skipping + waiting
    elif features.has_select_for_update_skip_locked:
        assert connection.vendor in ("postgresql", "mysql")
        assert skipping.endswith("FOR UPDATE SKIP LOCKED")
        assert waiting.endswith("FOR UPDATE")
    else:
        # MySQL before 8.0.1 and MariaDB before 10.6: the lock waits instead.
        assert skipping.endswith("FOR UPDATE") and waiting.endswith("FOR UPDATE")


ROUTING = re.compile(r"\.using\(\s*db\.alias\(\)\s*\)|\bdb\.lock\(|supports_skip_locked")


def hand_routed(root: Path = REPO) -> list[str]:
    """Each line outside the base that routes a query to the queue database by hand."""
    found = []
    for package in ("steady_queue", "steady_queue_dashboard"):
        for path in sorted((root / package).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name == "steady_queue/models/base.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if ROUTING.search(line):
                    found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_only_the_base_manager_routes_queries_to_the_queue_database():
    assert hand_routed() == [], "write Model.objects and qs.locked() instead"


@pytest.mark.parametrize(
    "line",
    [
        "Job.objects.using(db.alias()).get(pk=1)",
        "Job.objects.using( db.alias() ).get(pk=1)",
        "rows = db.lock(Job.objects.all())",
    ],
)
def test_the_check_sees_hand_routing(tmp_path, line):
    module = tmp_path / "steady_queue_dashboard" / "adapter" / "extra.py"
    module.parent.mkdir(parents=True)
    module.write_text(f"def f():\n    {line}\n")
    assert hand_routed(tmp_path) == [f"steady_queue_dashboard/adapter/extra.py:2: {line}"]
