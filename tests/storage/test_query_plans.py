"""The engine's hot statements read indexes on large tables: no table scan, no sort.

Each test runs the real operation (claim, finish, dispatch, release) against tables of
100,000 rows, captures the statements it sent, and EXPLAINs each one that reads a large
table. PostgreSQL, MySQL/MariaDB and SQLite each state it their way:

- PostgreSQL: no ``Seq Scan`` on a large table, no ``Sort`` node, the expected index;
- MySQL/MariaDB: no full scan (``type: ALL``), no ``filesort``, the expected index;
- SQLite: no ``SCAN`` of a table without an index, no temporary B-tree for ORDER BY.

(The dashboard's list queries are checked in tests/dashboard/test_plans.py.)
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

import steady_queue
from steady_queue import storage
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    Process,
    ReadyExecution,
    ScheduledExecution,
)
from steady_queue.runner.perform import perform

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 100_000
LARGE_TABLES = (
    "steady_queue_jobs",
    "steady_queue_ready_executions",
    "steady_queue_scheduled_executions",
    "steady_queue_blocked_executions",
    "steady_queue_claimed_executions",
)
# One in a hundred scheduled jobs is due (and blocked jobs expired); 2,000 concurrency
# keys share the blocked jobs; claimed jobs belong to another process.
DUE_EVERY = 100
KEYS = 2_000


@pytest.fixture
def process() -> Process:
    return Process.register(kind=Process.Kind.WORKER, name="worker-plans", pid=os.getpid())


def test_claims_read_the_poll_indexes(process, monkeypatch):
    fill("ready", ROWS)
    fill("claimed", ROWS)
    # PostgreSQL: the second claim starts after the first's last key (claim_cursor).
    monkeypatch.setattr(steady_queue, "claim_rescan_interval", timedelta(hours=1))

    for queues, index in [(["*"], "sq_poll_all"), (["q2"], "sq_poll_by_queue")]:
        for _ in range(2):
            statements = captured(lambda queues=queues: storage.claim(queues, 10, process))
            assert_indexed(statements, index)

    # The claims of one process (to release or fail them): either index on process_id.
    claims = ClaimedExecution.objects.filter(process=process)
    statements = captured(lambda: list(claims.values_list("job_id")))
    assert_indexed(statements, "sq_claimed_by_process", "claimed_executions_process_id")


def test_finishing_a_job_reads_primary_keys_only(process):
    fill("finished", ROWS)
    fill("claimed", ROWS)
    fill("ready", 100)
    claimed = storage.claim(["*"], 1, process)[0]

    assert_indexed(captured(lambda: perform(claimed)))


def test_dispatch_reads_due_jobs_in_index_order():
    fill("scheduled", ROWS)

    statements = captured(lambda: ScheduledExecution.dispatch_next_batch(50))

    assert_indexed(statements, "sq_dispatch_all")
    assert ReadyExecution.objects.count() == 50


def test_releasing_blocked_jobs_reads_them_by_key_and_expiry():
    fill("blocked", ROWS)

    assert_indexed(captured(lambda: BlockedExecution.release_one("k7")), "sq_blocked_release")
    # The expired keys: a range of the expiry index, or the keys in order while a few
    # of each have expired (the planner's pick, by the statistics).
    statements = captured(lambda: BlockedExecution.unblock(10))
    assert_indexed(statements, "sq_blocked_maintenance", "sq_blocked_release")


# Filling ---------------------------------------------------------------------------------


def fill(kind: str, count: int) -> None:
    """Insert ``count`` jobs of ``kind`` and their executions, in two statements."""
    now = timezone.now()
    times = {"now": now, "past": now - timedelta(hours=1), "future": now + timedelta(hours=1)}
    params = {name: connection.ops.adapt_datetimefield_value(t) for name, t in times.items()}
    columns = _job_columns(kind)
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM steady_queue_jobs")
        params["after"] = cursor.fetchone()[0]
        cursor.execute(
            f"INSERT INTO steady_queue_jobs ({', '.join(columns)})"
            f" SELECT {', '.join(columns.values())} FROM {_numbers(count)}",
            params,
        )
        if kind in EXECUTIONS:
            table, columns, values = EXECUTIONS[kind]
            cursor.execute(
                f"INSERT INTO {table} (job_id, created_at, {columns})"
                f" SELECT id, %(now)s, {values} FROM steady_queue_jobs WHERE id > %(after)s",
                params,
            )
        cursor.execute(ANALYZE[connection.vendor])


def _job_columns(kind: str) -> dict[str, str]:
    """Each column of the jobs table and the SQL of its value, numbered by N."""
    key = f"'k' || ({N} %% {KEYS})"
    if connection.vendor == "mysql":
        key = f"CONCAT('k', {N} %% {KEYS})"
    return {
        "queue_name": f"CASE {N} %% 4 WHEN 0 THEN 'q0' WHEN 1 THEN 'q1' ELSE 'q2' END",
        "task_path": "'tests.tasks.noop'",
        "backend": "'default'",
        "arguments": "'{}'",
        "priority": f"({N} %% 7) - 3",
        "scheduled_at": DUE.replace("id", N) if kind == "scheduled" else "NULL",
        "finished_at": "%(now)s" if kind == "finished" else "NULL",
        "concurrency_key": key if kind == "blocked" else "''",
        "attempts": "'[]'",
        "created_at": "%(now)s",
        "updated_at": "%(now)s",
    }


N = "(d0.n + 10 * d1.n + 100 * d2.n + 1000 * d3.n + 10000 * d4.n + 100000 * d5.n)"
DUE = f"CASE WHEN id %% {DUE_EVERY} = 0 THEN %(past)s ELSE %(future)s END"
# Per kind: the execution table, its columns, and their values from the job row.
EXECUTIONS = {
    "ready": ("steady_queue_ready_executions", "queue_name, priority", "queue_name, priority"),
    "scheduled": (
        "steady_queue_scheduled_executions",
        "queue_name, priority, scheduled_at",
        "queue_name, priority, scheduled_at",
    ),
    "blocked": (
        "steady_queue_blocked_executions",
        "queue_name, priority, concurrency_key, expires_at",
        f"queue_name, priority, concurrency_key, {DUE}",
    ),
    "claimed": ("steady_queue_claimed_executions", "process_id", "-1"),
}
ANALYZE = {
    "postgresql": "ANALYZE",
    "mysql": "ANALYZE TABLE " + ", ".join(LARGE_TABLES),
    "sqlite": "ANALYZE",
}


def _numbers(count: int) -> str:
    digits = " UNION ALL ".join(f"SELECT {digit} AS n" for digit in range(10))
    tables = ", ".join(f"({digits}) d{index}" for index in range(6))
    return f"{tables} WHERE {N} < {count}"


# Plans -----------------------------------------------------------------------------------


def captured(operation) -> list[tuple[str, tuple]]:
    """Run ``operation``; return the statements (and parameters) it sent to large tables."""
    sent = []

    def record(execute, sql, params, many, context):
        # Named parameters (SQLite's long statements, sqlite.claim.named) stay a dict.
        sent.append((sql, params if isinstance(params, dict) else tuple(params or ())))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        operation()
    statements = [each for sql, params in sent for each in _split(sql, params)]
    return [(sql, params) for sql, params in statements if _reads_a_large_table(sql)]


def _split(sql: str, params: tuple) -> list[tuple[str, tuple]]:
    """The statements of a script (MySQL's fast storage sends a transaction as one)."""
    if isinstance(params, dict):
        return [(sql, params)]
    statements = []
    for part in sql.split(";\n"):
        count = part.count("%s")
        statements.append((part, params[:count]))
        params = params[count:]
    return statements


def assert_indexed(statements: list[tuple[str, tuple]], *indexes: str) -> None:
    """No statement scans or sorts a large table; one of them reads one of ``indexes``."""
    assert statements, "the operation sent no statement reading a large table"
    plans = [explain(sql, params) for sql, params in statements]
    for (sql, _), plan in zip(statements, plans, strict=True):
        problems = PROBLEMS[connection.vendor](plan)
        assert not problems, f"{problems} in the plan of\n{sql}\n{plan}"
    if indexes:
        used = [index for index in indexes if any(index in plan for plan in plans)]
        assert used, f"none of {indexes} used:\n" + "\n".join(plans)


def explain(sql: str, params: tuple) -> str:
    prefix = {"postgresql": "EXPLAIN ", "mysql": "EXPLAIN ", "sqlite": "EXPLAIN QUERY PLAN "}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(prefix[connection.vendor] + sql, params)
        rows = cursor.fetchall()
        if connection.vendor == "mysql":
            names = [column[0] for column in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in rows]
            return "\n".join(
                f"table={r['table']} type={r['type']} key={r['key']} extra={r['Extra']}"
                for r in rows
            )
    return "\n".join(str(row[-1]) for row in rows)


def _reads_a_large_table(sql: str) -> bool:
    statement = sql.lstrip().split(None, 1)[0].upper()
    reads = statement in ("SELECT", "WITH", "UPDATE", "DELETE")
    return reads and any(table in sql for table in LARGE_TABLES)


def _postgres_problems(plan: str) -> list[str]:
    nodes = [line.strip().removeprefix("->  ") for line in plan.splitlines()]
    scans = [n for n in nodes if n.startswith("Seq Scan on") and n.split()[3] in LARGE_TABLES]
    # rows=0: a sort of a relation proven empty while planning (the claim's scan after
    # the last claimed key when it starts from the head: its key is NULL), not a sort.
    sorts = [node for node in nodes if node.startswith("Sort  (") and " rows=0 " not in node]
    return scans + sorts


def _mysql_problems(plan: str) -> list[str]:
    lines = plan.splitlines()
    scans = [
        line
        for line in lines
        if "type=ALL" in line and line.split()[0].removeprefix("table=") in LARGE_TABLES
    ]
    return scans + [line for line in lines if "filesort" in line]


def _sqlite_problems(plan: str) -> list[str]:
    lines = plan.splitlines()
    scans = [
        line
        for line in lines
        if line.startswith("SCAN ") and line.split()[1] in LARGE_TABLES and "INDEX" not in line
    ]
    return scans + [line for line in lines if "TEMP B-TREE FOR ORDER BY" in line]


PROBLEMS = {
    "postgresql": _postgres_problems,
    "mysql": _mysql_problems,
    "sqlite": _sqlite_problems,
}
