"""The queries KEDA's PostgreSQL scaler runs (deploy/kubernetes/keda.yaml), on real tables.

The text is read from the manifest and run as it stands. The count of jobs that need a
worker thread is standard SQL and runs on every database under test; the latency uses
PostgreSQL's clock arithmetic and runs on PostgreSQL (the scaler's only database).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from steady_queue.models import Job, Pause, ReadyExecution
from tests import tasks

from .files import keda_queries

QUERIES = keda_queries()
READY_AND_RUNNING = QUERIES["ready-and-running-jobs"]
LATENCY = QUERIES["queue-latency"]


def run(query: str):
    with connection.cursor() as cursor:
        cursor.execute(query)
        (row,) = cursor.fetchall()
    (value,) = row
    return value


def enqueue(count: int, queue: str = "default", **options) -> list[int]:
    return [tasks.noop.using(queue_name=queue, **options).enqueue().id for _ in range(count)]


def backdate(job_id: int, seconds: float) -> None:
    moment = timezone.now() - timedelta(seconds=seconds)
    ReadyExecution.objects.filter(job_id=job_id).update(created_at=moment)


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_each_query_names_only_tables_and_columns_this_database_has(db, query):
    aliases = {a: t for t, a in re.findall(r"\b(steady_queue_\w+) AS (\w+)", query)}
    tables = set(re.findall(r"\bsteady_queue_\w+", query))
    assert tables <= set(connection.introspection.table_names()), tables
    with connection.cursor() as cursor:
        for alias, column in re.findall(r"\b(\w+)\.(\w+)\b", query):
            described = connection.introspection.get_table_description(cursor, aliases[alias])
            assert column in {c.name for c in described}, f"{aliases[alias]} has no {column}"


@pytest.mark.django_db
def test_the_count_is_ready_jobs_of_unpaused_queues_plus_running_ones():
    assert run(READY_AND_RUNNING) == 0
    enqueue(4)
    enqueue(2, "background")
    enqueue(3, "low")
    enqueue(5, run_after=timezone.now() + timedelta(hours=1))  # scheduled: not due
    Pause.objects.create(queue_name="low")
    (claimed,) = ReadyExecution.claim(["default"], 1, None)
    # Ready: 3 in default and 2 in background (low is paused); running: 1.
    assert run(READY_AND_RUNNING) == 6
    Pause.objects.filter(queue_name="low").delete()
    assert run(READY_AND_RUNNING) == 9
    Job.objects.filter(pk=claimed.job_id).delete()  # the running job ended
    assert run(READY_AND_RUNNING) == 8


@pytest.mark.django_db
def test_the_count_stops_at_ten_thousand_ready_jobs_per_run():
    # The cap keeps the query's cost bounded with millions of ready rows; at the cap,
    # KEDA already asks for maxReplicaCount at any sensible target.
    tasks.noop.using(queue_name="background").enqueue()
    (job,) = Job.objects.all()
    copies = [
        Job(task_path=job.task_path, queue_name="background", arguments=job.arguments)
        for _ in range(10_004)
    ]
    created = Job.objects.bulk_create(copies, batch_size=2000)
    ReadyExecution.create_all_from_jobs(created)
    assert ReadyExecution.objects.count() == 10_005
    assert run(READY_AND_RUNNING) == 10_000


@pytest.mark.postgres_only
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the latency query is PostgreSQL's (EXTRACT EPOCH)"
)
# Committed rows, each query in its own transaction as KEDA runs it: now() is the
# query's start, not the start of a test-wide transaction.
@pytest.mark.django_db(transaction=True)
def test_the_latency_is_the_wait_of_the_job_a_worker_takes_next():
    assert run(LATENCY) == 0
    (next_one,) = enqueue(1, priority=5)
    (older_but_later,) = enqueue(1, priority=0)
    (paused,) = enqueue(1, "low", priority=9)
    enqueue(2, run_after=timezone.now() + timedelta(hours=1), priority=9)  # scheduled
    backdate(next_one, 120)
    backdate(older_but_later, 500)  # lower priority: not the one taken next
    backdate(paused, 1000)  # its queue is paused
    Pause.objects.create(queue_name="low")
    assert 120 <= run(LATENCY) < 130
    Pause.objects.filter(queue_name="low").delete()
    assert 1000 <= run(LATENCY) < 1010


@pytest.mark.postgres_only
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plan")
@pytest.mark.django_db
def test_the_latency_reads_the_poll_index_however_many_jobs_are_ready():
    tasks.noop.enqueue()
    (job,) = Job.objects.all()
    copies = [
        Job(task_path=job.task_path, queue_name=f"q{n % 7}", arguments={}, priority=n % 3)
        for n in range(20_000)
    ]
    ReadyExecution.create_all_from_jobs(Job.objects.bulk_create(copies, batch_size=5000))
    Pause.objects.create(queue_name="q1")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE steady_queue_ready_executions")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {LATENCY}")
        plan = json.dumps(cursor.fetchone()[0])
    assert '"Index Name": "sq_poll_all"' in plan, plan
    assert '"Node Type": "Sort"' not in plan, plan
