"""Batches with the real ``manage.py steady_queue``: callbacks exactly once per finish,
while worker processes are killed with SIGKILL under the batches' last jobs.

The test enqueues small batches while two worker processes run them, and kills a worker
that holds claims every few batches. A plain member killed mid-run fails for good
(ProcessExitError) and its batch counts it failed; a member of an ``at_least_once`` task
runs again; callbacks run again too if killed. Whatever the kills hit, each batch must
finish once, with exactly the callbacks of its outcome, each enqueued once.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import pytest
from django.db import connection

from steady_queue.backend import enqueue_all
from steady_queue.batches import batch
from steady_queue.models import Batch, ClaimedExecution, FailedExecution, Job, Process
from tests.processes.conftest import has_exited, wait_until
from tests.tasks import group_processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

# The whole suite runs 200 batches on every database; the fault suite (`make
# test-faults`, marked slow) runs 1,000: about 100 s per database on 2 cores.
RUNS = [pytest.param(200, id="200"), pytest.param(1000, id="1000", marks=pytest.mark.slow)]
KILLS = 10  # spread over the run: a kill every runs // KILLS batches
MEMBER_SECONDS = 0.01
CALLBACKS = {"on_finish": tasks.finished, "on_success": tasks.succeeded, "on_failure": tasks.failed}
EXIT_ERROR = "steady_queue.processes.ProcessExitError"
CALLBACK_NAMES = {task.module_path: name for name, task in CALLBACKS.items()}


@pytest.mark.parametrize("runs", RUNS)
def test_callbacks_come_once_per_finish_while_workers_are_killed(start_supervisor, run_log, runs):
    supervisor = start_supervisor("GROUPS", children=3, SQ_GROUPS_LOG=str(run_log.path))
    started, kills = time.monotonic(), 0
    for n in range(runs):
        enqueue_batch(n)
        # A kill is due every runs // KILLS batches, made at the first batch after that
        # finds both workers up and one of them running jobs.
        if kills < min((n + 1) * KILLS // runs, KILLS):
            kills += kill_a_busy_worker(supervisor)
    enqueued = time.monotonic() - started

    def ended_while_killing() -> bool:
        nonlocal kills
        if kills < KILLS:  # the rest of the kills while the workers drain
            kills += kill_a_busy_worker(supervisor)
        return everything_ended(runs)

    try:
        wait_until(ended_while_killing, timeout=180, what=f"{runs} batches and their callbacks")
    except AssertionError:
        print(stuck())
        raise
    print(
        f"{connection.vendor}: {runs} batches enqueued in {enqueued:.1f} s, {kills} kills, "
        f"all ended after {time.monotonic() - started:.1f} s"
    )

    batches = list(Batch.objects.order_by("pk"))
    assert len(batches) == runs
    for each in batches:
        assert each.total == 3 and each.succeeded + each.failed == 3, each
        assert each.finishes == 1 and each.finished_at is not None, each
        outcome = "on_success" if each.failed == 0 else "on_failure"
        assert sorted(c["callback"] for c in each.callback_jobs) == sorted(["on_finish", outcome])
    assert_each_callback_job_enqueued_once_and_run_once(batches, run_log)
    assert_the_kills_hit_batches(batches, kills)


def enqueue_batch(n: int) -> None:
    with batch(**CALLBACKS, description=f"run {n}"):
        enqueue_all(
            [
                (tasks.member, (f"m-{n}-0", MEMBER_SECONDS), {}),
                (tasks.member, (f"m-{n}-1", MEMBER_SECONDS), {}),
                (tasks.rerun_member, (f"m-{n}-2", MEMBER_SECONDS), {}),
            ]
        )


def kill_a_busy_worker(supervisor) -> int:
    """SIGKILL a worker running jobs, if the previous kill's replacement is up; 1 if killed."""
    workers = supervisor.children(Process.Kind.WORKER)
    pids = {w.pk: w.pid for w in workers if not has_exited(w.pid)}
    busy = ClaimedExecution.objects.filter(process_id__in=pids).values_list("process_id", flat=True)
    victim = next(iter(busy), None)
    if len(pids) < 2 or victim is None:
        return 0
    try:
        os.kill(pids[victim], signal.SIGKILL)
    except ProcessLookupError:  # it ended (was reaped) since it was listed: no kill made
        return 0
    return 1


def everything_ended(runs: int) -> bool:
    if Batch.objects.filter(finished_at__isnull=True).exists():
        return False
    callbacks = Job.objects.filter(task_path__in=[t.module_path for t in CALLBACKS.values()])
    return callbacks.count() == 2 * runs and not callbacks.filter(finished_at__isnull=True).exists()


def assert_each_callback_job_enqueued_once_and_run_once(batches: list[Batch], run_log) -> None:
    recorded = {c["job_id"]: f"{c['callback']}-{b.pk}" for b in batches for c in b.callback_jobs}
    callback_jobs = Job.objects.filter(task_path__in=[t.module_path for t in CALLBACKS.values()])
    jobs = {job.pk: job for job in callback_jobs}
    assert set(jobs) == set(recorded), "a callback job that no batch recorded, or one missing"
    calls = Counter(
        (CALLBACK_NAMES[job.task_path], job.arguments["args"][0]) for job in jobs.values()
    )
    assert set(calls.values()) == {1}, "a callback enqueued twice for one batch"
    runs = Counter(run_log.entries())
    for job_id, label in recorded.items():
        attempts = jobs[job_id].attempts
        assert [a["error"] for a in attempts][-1] is None, label  # it succeeded, once
        # One run per attempt at most (a kill before its log line leaves none).
        assert 1 <= runs[label] <= len(attempts), (label, runs[label], attempts)
        if len(attempts) == 1:
            assert runs[label] == 1, label


def assert_the_kills_hit_batches(batches: list[Batch], kills: int) -> None:
    """Some batches lost a member to a kill; some were finished by the killed job's end."""
    crashed = set(
        FailedExecution.objects.filter(exception_class=EXIT_ERROR).values_list("job_id", flat=True)
    )
    rerun = {
        job.pk
        for job in Job.objects.filter(task_path=tasks.rerun_member.module_path)
        if any((a["error"] or {}).get("exception_class") == EXIT_ERROR for a in job.attempts)
    }
    hit = Counter(Job.objects.filter(pk__in=crashed | rerun).values_list("batch_id", flat=True))
    last = finished_by_a_killed_job(batches, crashed | rerun)
    print(
        f"{kills} kills: {len(crashed)} members failed, {len(rerun)} rerun, "
        f"{len(hit)} batches hit, {last} finished by the end of a killed job"
    )
    # A kill waits for the last one's replacement: the drain may end before the last ones.
    assert kills >= KILLS // 2, "the workers were seldom busy when killed"
    assert hit and last, "no kill hit a batch's last job: the scenario did not happen"


def finished_by_a_killed_job(batches: list[Batch], killed: set[int]) -> int:
    """How many batches ended with the end of a job that a kill had hit."""
    ends: dict[int, list] = {}
    failures = dict(FailedExecution.objects.values_list("job_id", "created_at"))
    for job in Job.objects.filter(batch_id__isnull=False):
        ended_at = job.finished_at or failures.get(job.pk)
        ends.setdefault(job.batch_id, []).append((ended_at, job.pk))
    return sum(1 for b in batches if max(ends[b.pk])[1] in killed)


def stuck() -> str:
    """What is left unended: the unfinished batches and where their jobs are."""
    lines = []
    for each in Batch.objects.filter(finished_at__isnull=True).order_by("pk")[:10]:
        states = [
            (job.pk, job.task_path.rsplit(".", 1)[1], job.state, job.finished_at, job.attempts)
            for job in Job.objects.with_execution().filter(batch_id=each.pk)
        ]
        lines.append(f"{each.pk} {each.progress} {states}")
    callbacks = Job.objects.filter(task_path__in=[t.module_path for t in CALLBACKS.values()])
    lines.append(
        f"callback jobs {callbacks.count()}, unfinished "
        f"{list(callbacks.filter(finished_at__isnull=True).with_execution()[:10])}"
    )
    return "\n".join(lines)
