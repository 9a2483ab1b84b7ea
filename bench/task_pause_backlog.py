"""Whether a paused task's backlog slows the claims of other tasks: 100,000 paused jobs
against none, in the same run.

    python bench/task_pause_backlog.py                      # PostgreSQL; --db mysql or sqlite
    python bench/task_pause_backlog.py --backlog 100000 --rounds 5 --jobs 2000

Each round measures two phases, in alternating order (interleaved, so that a drift of
the machine falls on both alike):

- without: ``--jobs`` ready jobs of ``bench.task_pause_tasks.other``, nothing else;
- with: the same, beside ``--backlog`` jobs of ``bench.task_pause_tasks.export``, a
  paused task (paused, then its jobs enqueued: they go straight to the paused table).

Consecutive phases of the same kind share the backlog (built once, not per phase).

Before each phase the database is vacuumed and analyzed (``_settle``). A phase's claim
rate is ``--jobs`` divided by the time to claim them all in polls of
``--batch`` through the database's fast storage, as a worker's main loop does
(``storage.for_alias().claim``), for a registered worker process. Figures are the medians of
``--rounds`` rounds. At the end the backlog is resumed (the time of ``resume_task``,
and whether its jobs came back in their order), then paused again (the time of
``pause_task`` moving that many ready jobs). The database (``--name``, default
sq_bench_task_pauses) is dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PAUSED = "bench.task_pause_tasks.export"
POLL = ("-priority", "job_id")


def main() -> int:
    options = _parse_args()
    from bench import database, system

    database.prepare(options.db, options.name)
    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{options.backlog:,} paused jobs, {options.jobs:,} other jobs, {options.rounds} rounds")
    figures: dict[str, list[float]] = {}
    backlog = False
    for round_ in range(options.rounds):
        order = (False, True) if round_ % 2 == 0 else (True, False)
        for wanted in order:
            if wanted != backlog:
                _build_backlog(options) if wanted else database.truncate()
                backlog = wanted
            _enqueue("other", options.jobs)
            _settle()
            name = f"claims/s {'with' if wanted else 'without'}"
            figures.setdefault(name, []).append(_claim_rate(options))
        print(f"round {round_ + 1}: " + _line(figures, -1), flush=True)
    print("medians: " + _line(figures))
    if not backlog:
        _build_backlog(options)
    _moves(options)
    return 0


def _build_backlog(options: argparse.Namespace) -> None:
    """Pause the task, then enqueue its backlog: straight to the paused table."""
    from steady_queue.models import PausedExecution
    from steady_queue.pauses import pause_task

    pause_task(PAUSED)
    _enqueue("export", options.backlog)
    assert PausedExecution.objects.count() == options.backlog
    _analyze()


def _enqueue(name: str, count: int) -> None:
    from bench import task_pause_tasks
    from steady_queue.backend import enqueue_all

    task = getattr(task_pause_tasks, name)
    for start in range(0, count, 5000):
        enqueue_all([(task, (), {})] * min(5000, count - start))


def _settle() -> None:
    """Start each measurement from the same state: the claims of the phase before left
    dead entries at the head of the poll index, which PostgreSQL's scans would step over
    until a vacuum (autovacuum's work, which a test server may not do in time); on
    SQLite, the backlog's writes wait in the WAL file until a checkpoint."""
    from django.db import connection

    from bench import database

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
            database._checkpoint(cursor)
    else:
        _analyze()
    if connection.vendor == "sqlite":  # the backlog's writes out of the WAL file
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _analyze() -> None:
    """As autovacuum would soon (a test server may run without it)."""
    from django.db import connection

    statement = {"postgresql": "ANALYZE", "sqlite": "ANALYZE"}.get(connection.vendor)
    if connection.vendor == "mysql":
        statement = "ANALYZE TABLE steady_queue_jobs, steady_queue_paused_executions"
    with connection.cursor() as cursor:
        cursor.execute(statement)


def _process():
    from steady_queue.models import Process

    return Process.register(kind=Process.Kind.WORKER, name="bench", pid=os.getpid())


def _claim_rate(options: argparse.Namespace) -> float:
    """Claim ``--jobs`` ready jobs of the other task in polls of ``--batch``; jobs/s."""
    from steady_queue import storage
    from steady_queue.models import Job

    process, claimed, began = _process(), 0, time.perf_counter()
    while batch := storage.for_alias().claim(["*"], options.batch, process):
        claimed += len(batch)
    elapsed = time.perf_counter() - began
    assert claimed == options.jobs, claimed
    Job.objects.filter(task_path="bench.task_pause_tasks.other").delete()
    return claimed / elapsed


def _moves(options: argparse.Namespace) -> None:
    """The time to resume the backlog (paused to ready, in order) and to pause it again."""
    from steady_queue.models import ReadyExecution
    from steady_queue.pauses import pause_task, resume_task

    began = time.perf_counter()
    resumed = resume_task(PAUSED)
    elapsed = time.perf_counter() - began
    ids = list(ReadyExecution.objects.order_by(*POLL).values_list("job_id", flat=True))
    in_order = ids == sorted(ids) and len(ids) == resumed == options.backlog
    print(f"resume_task: {resumed:,} jobs ready again in {elapsed:.2f} s, in order: {in_order}")
    began = time.perf_counter()
    moved = pause_task(PAUSED)
    elapsed = time.perf_counter() - began
    print(f"pause_task: {moved:,} ready jobs moved to paused in {elapsed:.2f} s")


def _line(figures: dict[str, list[float]], index: int | None = None) -> str:
    parts = []
    for name, values in figures.items():
        value = statistics.median(values) if index is None else values[index]
        parts.append(f"{name} {value:,.2f}" if name.endswith(" s") else f"{name} {value:,.0f}")
    return ", ".join(parts)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--name", default="sq_bench_task_pauses")
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
