"""What durable execution costs: a step against a plain call, and 10,000 sleeping jobs
against the claims of everything else.

    python bench/durable.py                      # PostgreSQL; --db mysql or sqlite
    python bench/durable.py --jobs 200 --steps 10 --rounds 5 --sleeping 10000

Steps. Each round runs ``--jobs`` jobs of ``--steps`` calls each, in-process (a claim,
then ``perform``, as ``steady_queue.testing.run_ready_jobs`` does), in three phases
taking turns (their order alternates from round to round, so that a drift of the
machine falls on all alike): ``plain`` calls a function ``--steps`` times; ``stepped``
wraps each call in ``step(context, name, fn)``, which records its result; ``replayed``
runs jobs whose steps were all recorded by an earlier run (the run after a sleep), so
that each ``step`` returns its stored value. A phase's figures are its wall time and
every statement its runs sent through Django, per job; a step's
overhead is the difference to ``plain``, per step.

Sleeping jobs. ``--sleeping`` jobs of a task that takes one step and sleeps a day are
made once (one run for real; the rest in bulk as that run left its job: scheduled a
day later, its step and its sleep recorded), their rows kept aside; each round then measures, with
and without them (taking turns), the claim of ``--ready`` ready jobs in polls of
``--batch`` through the database's fast storage as a worker's loop does
(``storage.for_alias().claim``), and the dispatcher's poll for due scheduled jobs
(``ScheduledExecution.dispatch_next_batch``, none due), with each one's statements and
its plan (``EXPLAIN`` of the ready and scheduled queries). The database (``--name``,
default sq_bench_durable) is dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SLEEPER = "bench.durable_tasks.sleeper"
#: The tables holding the sleeping backlog, in the order their rows are put back.
BACKLOG_TABLES = (
    "steady_queue_jobs",
    "steady_queue_scheduled_executions",
    "steady_queue_job_steps",
)


def main() -> int:
    options = _parse_args()
    from bench import database, system

    database.prepare(options.db, options.name)
    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    _steps(options)
    _sleeping(options)
    return 0


# Steps.


def _steps(options: argparse.Namespace) -> None:
    print(f"\nsteps: {options.jobs} jobs of {options.steps} calls, {options.rounds} rounds")
    figures: dict[str, dict[str, list[float]]] = {}
    phases = ["plain", "stepped", "replayed"]
    for round_ in range(options.rounds):
        order = phases if round_ % 2 == 0 else phases[::-1]
        for phase in order:
            seconds, statements = _phase(phase, options)
            each = figures.setdefault(phase, {"us": [], "statements": []})
            each["us"].append(seconds * 1e6 / options.jobs)
            each["statements"].append(statements / options.jobs)
        print(f"round {round_ + 1}: " + _steps_line(figures, -1), flush=True)
    print("medians: " + _steps_line(figures))
    plain = {key: statistics.median(values) for key, values in figures["plain"].items()}
    for phase in ("stepped", "replayed"):
        median = {key: statistics.median(values) for key, values in figures[phase].items()}
        us = (median["us"] - plain["us"]) / options.steps
        statements = (median["statements"] - plain["statements"]) / options.steps
        print(f"{phase}: {us:,.0f} µs and {statements:.2f} statements per step more than a call")


def _phase(phase: str, options: argparse.Namespace) -> tuple[float, int]:
    """Run ``--jobs`` jobs of the phase in-process; (seconds, statements)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench import database, durable_tasks
    from steady_queue import storage
    from steady_queue.backend import enqueue_all
    from steady_queue.runner.perform import perform

    database.truncate()
    task = durable_tasks.plain if phase == "plain" else durable_tasks.stepped_then_nap
    enqueue_all([(task, (options.steps,), {})] * options.jobs)
    if phase == "replayed":  # their first runs record the steps, then sleep
        _run_all()
        _wake_all()
    if phase == "stepped":
        task = durable_tasks.stepped
        database.truncate()
        enqueue_all([(task, (options.steps,), {})] * options.jobs)
    _settle()
    connection.queries_log.clear()  # a full log (9,000 entries) would capture nothing
    with CaptureQueriesContext(connection) as captured:
        began = time.perf_counter()
        ran = 0
        while claimed := storage.claim(["*"], 1, None):
            perform(claimed[0])
            ran += 1
        elapsed = time.perf_counter() - began
    assert ran == options.jobs, (phase, ran)
    return elapsed, len(captured.captured_queries)


def _run_all() -> None:
    from steady_queue import storage
    from steady_queue.runner.perform import perform

    while claimed := storage.claim(["*"], 10, None):
        for one in claimed:
            perform(one)


def _wake_all() -> None:
    """Make the sleeping jobs due now, as their time coming would; the dispatcher's move."""
    from django.utils import timezone

    from steady_queue.models import ScheduledExecution

    ScheduledExecution.objects.update(scheduled_at=timezone.now())
    while ScheduledExecution.dispatch_next_batch(1000):
        pass


def _steps_line(figures: dict, index: int | None = None) -> str:
    parts = []
    for phase, each in figures.items():
        pick = statistics.median if index is None else (lambda values: values[index])
        parts.append(f"{phase} {pick(each['us']):,.0f} µs {pick(each['statements']):.1f} st/job")
    return ", ".join(parts)


# Sleeping jobs.


def _sleeping(options: argparse.Namespace) -> None:
    from bench import database

    print(
        f"\nclaims: {options.ready} ready jobs in polls of {options.batch}, with and without "
        f"{options.sleeping:,} sleeping jobs, {options.rounds} rounds"
    )
    database.truncate()
    began = time.perf_counter()
    _build_backlog(options)
    print(f"{options.sleeping:,} sleeping jobs made in {time.perf_counter() - began:.0f} s")
    _keep_aside()
    figures: dict[str, list[float]] = {}
    plans: dict[bool, list[str]] = {}
    backlog = True
    for round_ in range(options.rounds):
        order = (False, True) if round_ % 2 == 0 else (True, False)
        for wanted in order:
            if wanted != backlog:
                _put_back() if wanted else _remove_backlog()
                backlog = wanted
            _enqueue_ready(options.ready)
            _settle()
            plans.setdefault(wanted, _plans())
            label = "with" if wanted else "without"
            us, statements = _claims(options)
            figures.setdefault(f"claim µs {label}", []).append(us)
            figures.setdefault(f"claim st {label}", []).append(statements)
            figures.setdefault(f"due poll µs {label}", []).append(_due_poll(options))
        print(f"round {round_ + 1}: " + _line(figures, -1), flush=True)
    print("medians: " + _line(figures))
    for wanted, lines in plans.items():
        print(f"\nplans {'with' if wanted else 'without'} the sleeping jobs:")
        print("\n".join(lines))


def _build_backlog(options: argparse.Namespace) -> None:
    """What ``--sleeping`` runs of the sleeper leave, made in bulk: one run for real, to
    check the shape, then the rest as that run left its job (scheduled a day later, its
    step and its sleep recorded), by ``enqueue_all`` and ``bulk_create``."""
    from datetime import timedelta

    from django.utils import timezone

    from bench import durable_tasks
    from steady_queue.backend import enqueue_all
    from steady_queue.models import JobStep, ScheduledExecution

    enqueue_all([(durable_tasks.sleeper, (), {})])
    _run_all()
    real = list(JobStep.objects.order_by("kind").values_list("kind", "name"))
    assert real == [("sleep", "1"), ("step", "begin")], real
    assert ScheduledExecution.objects.count() == 1
    wake = timezone.now() + timedelta(days=1)
    sleeper = durable_tasks.sleeper.using(run_after=wake)
    for start in range(1, options.sleeping, 5000):
        results = enqueue_all([(sleeper, (), {})] * min(5000, options.sleeping - start))
        now = timezone.now()
        rows = []
        for result in results:
            job_id = int(result.id)
            rows.append(
                JobStep(
                    job_id=job_id,
                    kind="step",
                    name="begin",
                    result={"n": 0, "ok": True},
                    created_at=now,
                    completed_at=now,
                )
            )
            rows.append(
                JobStep(
                    job_id=job_id,
                    kind="sleep",
                    name="1",
                    until=wake,
                    created_at=now,
                    completed_at=now,
                )
            )
        JobStep.objects.bulk_create(rows, batch_size=1000)
    assert ScheduledExecution.objects.count() == options.sleeping


def _keep_aside() -> None:
    """Copy the backlog's rows into side tables, to put them back in seconds."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in BACKLOG_TABLES:
            cursor.execute(f"CREATE TABLE bench_{table} AS SELECT * FROM {table}")


def _put_back() -> None:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for table in BACKLOG_TABLES:
            cursor.execute(f"INSERT INTO {table} SELECT * FROM bench_{table}")
    _analyze()


def _remove_backlog() -> None:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for table in reversed(BACKLOG_TABLES):
            cursor.execute(f"DELETE FROM {table}")
    _analyze()


def _enqueue_ready(count: int) -> None:
    from bench import durable_tasks
    from steady_queue.backend import enqueue_all

    enqueue_all([(durable_tasks.plain, (1,), {})] * count)


def _claims(options: argparse.Namespace) -> tuple[float, float]:
    """Claim the ready jobs in polls of ``--batch``: (µs per poll, statements per poll)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from steady_queue import storage
    from steady_queue.models import Job, Process

    process = Process.register(kind=Process.Kind.WORKER, name="bench", pid=os.getpid())
    polls, claimed = 0, 0
    connection.queries_log.clear()
    with CaptureQueriesContext(connection) as captured:
        began = time.perf_counter()
        while batch := storage.for_alias().claim(["*"], options.batch, process):
            claimed, polls = claimed + len(batch), polls + 1
        elapsed = time.perf_counter() - began
    assert claimed == options.ready, claimed
    Job.objects.exclude(task_path=SLEEPER).delete()
    process.delete()
    return elapsed * 1e6 / polls, len(captured.captured_queries) / (polls + 1)


def _due_poll(options: argparse.Namespace, polls: int = 200) -> float:
    """The dispatcher's poll for due scheduled jobs (none due): µs per poll."""
    from steady_queue.models import ScheduledExecution

    began = time.perf_counter()
    for _ in range(polls):
        assert ScheduledExecution.dispatch_next_batch(100) == 0
    return (time.perf_counter() - began) * 1e6 / polls


def _plans() -> list[str]:
    """The plans of the claim's read of ready jobs and of the due poll's read."""
    from django.utils import timezone

    from steady_queue.models import ReadyExecution, ScheduledExecution
    from steady_queue.models.execution import POLL_ORDER

    ready = ReadyExecution.objects.order_by(*POLL_ORDER)[:10]
    due = ScheduledExecution.objects.filter(scheduled_at__lte=timezone.now())
    due = due.order_by("scheduled_at", "-priority", "job_id")[:100]
    return [f"  ready: {ready.explain()}", f"  due:   {due.explain()}"]


def _settle() -> None:
    from django.db import connection

    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _analyze()


def _analyze() -> None:
    """As autovacuum would soon (a test server may run without it)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE")
        elif connection.vendor == "mysql":
            tables = ", ".join((*BACKLOG_TABLES, "steady_queue_ready_executions"))
            cursor.execute(f"ANALYZE TABLE {tables}")
            cursor.fetchall()
        else:
            cursor.execute("ANALYZE")


def _line(figures: dict[str, list[float]], index: int | None = None) -> str:
    parts = []
    for name, values in figures.items():
        value = statistics.median(values) if index is None else values[index]
        parts.append(f"{name} {value:,.1f}")
    return ", ".join(parts)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--name", default="sq_bench_durable")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--sleeping", type=int, default=10_000)
    parser.add_argument("--ready", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
