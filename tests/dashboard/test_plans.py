"""The list pages' queries read the engine's indexes in order (EXPLAIN), never sort a table.

PostgreSQL is checked strictly: with sequential scans and explicit sorts priced out,
the plan must still walk the expected index (an incremental sort of ties is fine).
MySQL and SQLite are checked for the index name in their plans. The rows come from
the large-data command, a few thousand per table, so that the planners take them seriously.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    ThrottledExecution,
)
from steady_queue_dashboard.joblist import JobList
from steady_queue_dashboard.listings import LISTINGS

# Transactional: the fill command ends with VACUUM ANALYZE, which refuses a transaction.
pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {
    "finished": 3000,
    "failed": 2000,
    "scheduled": 2000,
    "ready": 2000,
    "blocked": 300,
    "throttled": 300,
}

EXPECTED = {
    ("ready", ""): "sq_poll_all",
    ("ready", "queue=low"): "sq_poll_by_queue",
    ("scheduled", ""): "sq_dispatch_all",
    ("blocked", ""): "sq_blocked_release",
    ("throttled", ""): "sq_throttled_release",
    ("failed", ""): "sq_failed_recent",
    ("cancelled", ""): "sq_failed_class",
    ("finished", ""): "sq_jobs_finished_at",
    ("finished", "queue=low"): "sq_jobs_for_filtering",
    ("finished", "task=billing.tasks.charge_card"): "sq_jobs_task_path",
}


# MariaDB sorts these small tables in memory rather than walk the index (at 10,000 ready
# jobs too; it walks sq_dispatch_all from some 50,000 scheduled jobs on). They are bounded
# by what the workers keep up with; the failed and finished lists are the big ones. The
# few hundred throttled jobs here are sorted in memory too.
SORTED_IN_MEMORY_ON_MARIADB = {
    ("ready", ""),
    ("scheduled", ""),
    ("blocked", ""),
    ("throttled", ""),
}


def test_list_queries_walk_their_indexes():
    # One test: filling the tables is the expensive part, and a flush follows each test.
    call_command(
        "steady_queue_dashboard_fill", claimed=20, batch_size=1000, batches=0, workflows=0, **SIZES
    )
    assert_filled()
    for status, query in EXPECTED:
        plan = explain(page_query(status, query))
        if connection.vendor == "mysql" and (status, query) in SORTED_IN_MEMORY_ON_MARIADB:
            continue
        assert EXPECTED[status, query] in plan, f"{status} {query}: {plan}"
        if connection.vendor == "postgresql":
            assert "Seq Scan" not in plan, plan
            assert not full_sorts(plan), plan


def assert_filled() -> None:
    assert Job.objects.filter(finished_at__isnull=False).count() == SIZES["finished"]
    assert FailedExecution.objects.count() == SIZES["failed"]
    assert ScheduledExecution.objects.count() == SIZES["scheduled"]
    assert ReadyExecution.objects.count() == SIZES["ready"]
    assert BlockedExecution.objects.count() == SIZES["blocked"]
    assert ThrottledExecution.objects.count() == SIZES["throttled"]
    assert ClaimedExecution.objects.count() == 20


def full_sorts(plan: str) -> list[str]:
    """Sort nodes that sort everything (an incremental sort of equal keys is fine)."""
    nodes = [line.strip().removeprefix("->  ") for line in plan.splitlines()]
    return [node for node in nodes if node.startswith("Sort  (")]


def page_query(status: str, query: str) -> str:
    with CaptureQueriesContext(connection) as captured:
        JobList(LISTINGS[status], QueryDict(query)).page()
    # A task filter first checks (on the task index) whether it names a full path.
    *checks, statement = [q["sql"] for q in captured.captured_queries]
    assert len(checks) <= (1 if "task=" in query else 0)
    return statement


def explain(sql: str) -> str:
    prefix = {"postgresql": "EXPLAIN ", "mysql": "EXPLAIN ", "sqlite": "EXPLAIN QUERY PLAN "}
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Priced out, not forbidden: a plan still using them has no index to walk.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_sort = off")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(prefix[connection.vendor] + sql)
        return "\n".join(" ".join(str(cell) for cell in row) for row in cursor.fetchall())
