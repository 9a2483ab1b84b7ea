"""``@transactional`` with the real ``manage.py steady_queue``: killed in the body, nothing
of it is kept; under load and kills, the rows written are exactly the succeeded jobs'."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter

import pytest
from django.db import connection

from steady_queue.backend import enqueue_all
from steady_queue.models import ClaimedExecution, Job, Process
from tests.models import TransactionalWrite
from tests.processes.conftest import has_exited, wait_until
from tests.tasks import transactional as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

EXIT_ERROR = "steady_queue.processes.ProcessExitError"


def test_a_worker_killed_in_the_body_leaves_no_row_and_the_job_runs_once_more(
    start_supervisor, run_log, tmp_path
):
    start_supervisor("FAST", children=2)
    release = tmp_path / "release"
    result = tasks.write_and_hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: "held" in run_log.entries("wrote"), what="the body to write its row")
    [worker] = Process.objects.filter(kind=Process.Kind.WORKER)
    assert not TransactionalWrite.objects.exists()  # written, not committed

    os.kill(worker.pid, signal.SIGKILL)
    release.touch()  # the retry does not hold

    job = wait_until(
        lambda: Job.objects.filter(pk=result.id, finished_at__isnull=False).first(),
        what="the job's retry to succeed",
    )
    assert list(TransactionalWrite.objects.values_list("token", "attempt")) == [("held", 2)]
    first, second = job.attempts
    assert first["error"]["exception_class"] == EXIT_ERROR and second["error"] is None
    assert run_log.entries("wrote") == ["held", "held"]  # the body ran twice; one row kept


# On PostgreSQL and MariaDB: SQLite serializes every write, and a transactional body holds
# its write lock, so four worker processes would only take turns.
@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite serializes the bodies")
def test_four_workers_write_exactly_the_rows_of_the_succeeded_jobs(start_supervisor, run_log):
    jobs, kills = 400, 6
    supervisor = start_supervisor("FOUR_WORKERS", children=5)
    tokens = [f"t{n}" for n in range(jobs)]
    calls = [(tasks.write_under_load, (str(run_log.path), token), {}) for token in tokens]
    enqueue_all(calls)

    # The first kill comes as soon as a worker holds a claim, the next ones 0.3 s apart: a
    # quiet machine runs all 400 jobs in under two seconds.
    started = next_kill = time.monotonic()
    killed = 0

    def finished_while_killing() -> bool:
        nonlocal killed, next_kill
        if killed < kills and time.monotonic() >= next_kill and kill_a_busy_worker(supervisor):
            killed += 1
            next_kill = time.monotonic() + 0.3
        return not Job.objects.filter(finished_at__isnull=True).exists()

    wait_until(finished_while_killing, timeout=180, what=f"{jobs} jobs to succeed")

    rows = Counter(TransactionalWrite.objects.values_list("token", flat=True))
    twice = {t: n for t, n in rows.items() if n > 1}
    assert rows == Counter(tokens), f"rows kept more than once: {twice}"  # each job's, once
    finished = {job.arguments["args"][1]: job.attempts for job in Job.objects.all()}
    kept = dict(TransactionalWrite.objects.values_list("token", "attempt"))
    for token, attempts in finished.items():
        assert attempts[-1]["error"] is None and kept[token] == len(attempts), token
    written = run_log.entries("wrote")
    failed_attempts = sum(len(attempts) - 1 for attempts in finished.values())
    crashed = sum(
        a["error"]["exception_class"] == EXIT_ERROR
        for attempts in finished.values()
        for a in attempts[:-1]
    )
    # Every attempt wrote its row (but one killed before its body), only the successes kept.
    assert jobs + failed_attempts - crashed <= len(written) <= jobs + failed_attempts
    assert failed_attempts > crashed  # the failures that raised after writing
    print(
        f"{connection.vendor}: {jobs} jobs, {failed_attempts} failed attempts rolled back "
        f"({crashed} of them killed, {killed} kills), {time.monotonic() - started:.1f} s"
    )
    assert killed >= 1 and crashed >= 1


def kill_a_busy_worker(supervisor) -> int:
    """SIGKILL a worker holding claims; 1 if one was killed."""
    workers = {w.pk: w.pid for w in supervisor.children(Process.Kind.WORKER)}
    workers = {pk: pid for pk, pid in workers.items() if not has_exited(pid)}
    busy = list(
        ClaimedExecution.objects.filter(process_id__in=workers).values_list("process_id", flat=True)
    )
    if not busy:
        return 0
    try:
        os.kill(workers[random.choice(busy)], signal.SIGKILL)
    except ProcessLookupError:
        return 0
    return 1
