"""The engine and the dashboard with Django's built-in connection pool (PostgreSQL).

The supervisor closes the pool before it forks (psycopg_pool runs threads, and a
child must not share the parent's sockets); each process then opens its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.db import connection

from steady_queue.models import FailedExecution, Job
from tests.processes.conftest import MANAGE, REPO, wait_until
from tests.processes.test_pgbouncer import RECURRING_TASK

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="Django's pool is PostgreSQL's (psycopg_pool)"
    ),
]

SETTINGS = "tests.processes.pool_settings"


def with_pool(call: str) -> str:
    """Run ``tests.processes.pgbouncer_client.<call>`` in a shell using the pool."""
    code = f"from tests.processes import pgbouncer_client as c; c.{call}"
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "SQ_PROCESS_DB_NAME": str(connection.settings_dict["NAME"]),
    }
    done = subprocess.run(
        [sys.executable, str(MANAGE), "shell", "-c", code],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_engine_and_the_dashboard_work_with_djangos_pool(start_supervisor):
    import json

    ids = [int(pk) for pk in json.loads(with_pool("enqueue_mix()"))["ids"]]
    supervisor = start_supervisor(
        "FAST", children=3, recurring=True, DJANGO_SETTINGS_MODULE=SETTINGS
    )

    wait_until(
        lambda: Job.objects.filter(pk__in=ids, finished_at__isnull=False).count() == len(ids) - 2,
        timeout=60,
        what="every job but the two failing ones to finish",
    )
    # The two failures end on their own schedule: the last successes can come first.
    wait_until(lambda: FailedExecution.objects.count() >= 2, what="the two failing jobs to fail")
    assert FailedExecution.objects.count() == 2
    wait_until(
        lambda: Job.objects.filter(task_path=RECURRING_TASK, finished_at__isnull=False).exists(),
        what="a recurring run",
    )
    failed_id = FailedExecution.objects.values_list("job_id", flat=True).first()
    seen = json.loads(with_pool(f"browse_dashboard('{ids[0]}', '{failed_id}')"))
    assert seen["statuses"] == dict.fromkeys(seen["statuses"], 200)
    assert seen["paused"] and seen["resumed"]
    output = supervisor.output()
    assert "Traceback" not in output and "Forking with threads running" not in output
