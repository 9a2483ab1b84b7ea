"""The poll queries read their covering index in order: no sort, no table scan."""

from __future__ import annotations

import pytest
from django.db import connection

from steady_queue.models import Job, ReadyExecution, fair_share
from steady_queue.models.execution import POLL_ORDER

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 100_000


def _fill_deep_queue():
    jobs = Job.objects.bulk_create(
        (
            Job(queue_name=f"q{i % 4}", task_path="tests.tasks.add", priority=i % 7 - 3)
            for i in range(ROWS)
        ),
        batch_size=5000,
    )
    ReadyExecution.objects.bulk_create(
        (ReadyExecution(job=j, queue_name=j.queue_name, priority=j.priority) for j in jobs),
        batch_size=5000,
    )
    with connection.cursor() as cursor:
        cursor.execute(_analyze())


def _analyze() -> str:
    return {
        "postgresql": "ANALYZE steady_queue_ready_executions",
        "mysql": "ANALYZE TABLE steady_queue_ready_executions",
        "sqlite": "ANALYZE",
    }[connection.vendor]


def _raw_plan(sql: str, params: list) -> str:
    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    with connection.cursor() as cursor:
        cursor.execute(explain + sql, params)
        return "\n".join(" ".join(str(value) for value in row) for row in cursor.fetchall())


def _mysql_rows_read(sql: str, params: list) -> int:
    """How many index entries MySQL/MariaDB stepped through to answer ``sql``."""
    with connection.cursor() as cursor:
        cursor.execute("FLUSH STATUS")
        cursor.execute(sql, params)
        cursor.fetchall()
        cursor.execute("SHOW SESSION STATUS LIKE 'Handler_read_next'")
        return int(cursor.fetchone()[1])


def _plan(queryset) -> str:
    return queryset.explain()


def _poll(queue_name=None):
    relation = ReadyExecution.objects.all()
    if queue_name:
        relation = relation.filter(queue_name=queue_name)
    return relation.order_by(*POLL_ORDER).values_list("job_id", flat=True)[:10]


def test_poll_queries_use_their_index_without_sorting():
    # One test for both queries: filling 100,000 rows is the expensive part.
    _fill_deep_queue()

    for queue_name, index in [(None, "sq_poll_all"), ("q2", "sq_poll_by_queue")]:
        plan = _plan(_poll(queue_name))
        assert index in plan, plan
        if connection.vendor == "postgresql":
            assert "Index Only Scan" in plan or "Index Scan" in plan, plan
            assert "Sort" not in plan and "Seq Scan" not in plan, plan
        elif connection.vendor == "mysql":
            assert "filesort" not in plan.lower(), plan
        else:
            assert "TEMP B-TREE" not in plan, plan

    top = list(_poll())
    highest = ReadyExecution.objects.filter(priority=3).order_by("job_id")
    assert top == list(highest.values_list("job_id", flat=True)[:10])

    # Fair share's tags: V and a key's last tag are each one index look-up (no scan).
    bounds = fair_share._bounds_sql([("q2", 1, ""), ("q3", -2, "tenant")])
    plan = _raw_plan(*bounds)
    if connection.vendor == "mysql":
        assert "ALL" not in plan and "filesort" not in plan.lower(), plan
        # Index look-ups, not a read of the queue's entries (MIN() read them all).
        assert _mysql_rows_read(*bounds) < 10
    else:
        assert "sq_poll_by_queue" in plan and "sq_ready_fair_key" in plan, plan
        assert "Seq Scan" not in plan and "Sort" not in plan, plan
