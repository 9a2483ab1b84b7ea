"""The engine and the dashboard through a real PgBouncer in transaction pooling mode.

With the settings docs/explanation/scaling.md gives for PgBouncer (``prepare_threshold: None``, no
server-side cursors, ``steady_queue.listen_database`` naming a direct connection), a
real ``manage.py steady_queue`` enqueues, claims, finishes, dispatches, runs recurring
tasks and limits concurrency through it, and every dashboard page answers. Before,
the fast path forced prepared statements, which fail there ("prepared statement
"_pg3_3" does not exist").
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.db import connection

from steady_queue.models import FailedExecution, Job
from tests.processes import pgbouncer
from tests.processes.conftest import MANAGE, REPO, wait_until

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PgBouncer is PostgreSQL's"),
]

SETTINGS = "tests.processes.pgbouncer_settings"
RECURRING_TASK = "tests.apps.acceptance_recurring_app.tasks.beat"


@pytest.fixture
def pgbouncer_port(transactional_db):
    with pgbouncer.running() as port:
        yield port


def through_pgbouncer(port: int, call: str, **env: str) -> dict:
    """Run ``tests.processes.pgbouncer_client.<call>`` in a shell behind PgBouncer."""
    code = f"from tests.processes import pgbouncer_client as c; c.{call}"
    done = subprocess.run(
        [sys.executable, str(MANAGE), "shell", "-c", code],
        cwd=REPO,
        env=_environment(port, env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _environment(port: int, env: dict[str, str]) -> dict[str, str]:
    import os

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "SQ_PROCESS_DB_NAME": str(connection.settings_dict["NAME"]),
        "SQ_PGBOUNCER_PORT": str(port),
        **env,
    }


def listening_backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND query ILIKE 'LISTEN%%'"
        )
        return cursor.fetchone()[0]


def test_the_engine_and_the_dashboard_work_through_pgbouncer(pgbouncer_port, start_supervisor):
    ids = [int(pk) for pk in through_pgbouncer(pgbouncer_port, "enqueue_mix()")["ids"]]

    supervisor = start_supervisor(
        "FAST",
        children=3,
        recurring=True,
        DJANGO_SETTINGS_MODULE=SETTINGS,
        SQ_PGBOUNCER_PORT=str(pgbouncer_port),
    )
    ours = Job.objects.filter(pk__in=ids)
    wait_until(
        lambda: (
            ours.filter(finished_at__isnull=False).count() == len(ids) - 2
            and FailedExecution.objects.filter(job__in=ours).count() == 2
        ),
        timeout=60,
        what="every job but the two failing ones to finish, and those two to fail",
    )
    assert set(FailedExecution.objects.values_list("job__task_path", flat=True)) == {
        "tests.tasks.explode"
    }
    wait_until(
        lambda: Job.objects.filter(task_path=RECURRING_TASK, finished_at__isnull=False).exists(),
        what="a recurring run",
    )
    assert listening_backends() >= 1  # workers and dispatchers LISTEN on the direct alias

    job_id = ids[0]
    failed_id = FailedExecution.objects.values_list("job_id", flat=True).first()
    seen = through_pgbouncer(pgbouncer_port, f"browse_dashboard('{job_id}', '{failed_id}')")
    assert seen["statuses"] == dict.fromkeys(seen["statuses"], 200)
    assert seen["paused"] and seen["resumed"]

    output = supervisor.output()
    for trouble in ("prepared statement", "Could not record", "Traceback"):
        assert trouble not in output


def test_without_a_direct_connection_processes_poll_and_say_so(pgbouncer_port, start_supervisor):
    supervisor = start_supervisor(
        "FAST",
        children=2,
        DJANGO_SETTINGS_MODULE=SETTINGS,
        SQ_PGBOUNCER_PORT=str(pgbouncer_port),
        SQ_PGBOUNCER_LISTEN="none",
    )
    ids = [int(pk) for pk in through_pgbouncer(pgbouncer_port, "enqueue_mix()")["ids"]]

    wait_until(
        lambda: Job.objects.filter(pk__in=ids, finished_at__isnull=False).count() == len(ids) - 2,
        timeout=60,
        what="the jobs, found by polling",
    )
    wait_until(
        lambda: "as behind a transaction-mode pooler" in supervisor.output(),
        what="the log line saying why processes poll",
    )
    assert listening_backends() == 0
