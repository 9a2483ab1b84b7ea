"""Whether a paused task's backlog slows the claims of other tasks: 100,000 paused jobs
against none, in the same run.

    python bench/task_pause_backlog.py                      # PostgreSQL; --db mysql or sqlite
    python bench/task_pause_backlog.py --backlog 100000 --rounds 5 --jobs 2000

Each round measures two phases, in alternating order (interleaved, so that a drift of
the machine falls on both alike):

- without: ``--jobs`` ready jobs of ``bench.task_pause_tasks.other``, nothing else;
- with: the same, after ``--backlog`` jobs of ``bench.task_pause_tasks.export`` were
  enqueued (ready, the storage's bulk enqueue) and the task paused (``pause_task``,
  which moves them to the paused table; its time is reported).

A phase's claim rate is ``--jobs`` divided by the time to claim them all in polls of
``--batch`` through the database's fast storage, as a worker's main loop does
(``storage.for_alias().claim``), for a registered worker process. Figures are the medians of
``--rounds`` rounds. At the end the backlog is resumed (the time of ``resume_task``,
and whether its jobs came back in their order). The database (``--name``, default
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


def main() -> int:
    options = _parse_args()
    from bench import database, system

    database.prepare(options.db, options.name)
    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{options.backlog:,} paused jobs, {options.jobs:,} other jobs, {options.rounds} rounds")
    figures: dict[str, list[float]] = {}
    for round_ in range(options.rounds):
        order = ("without", "with") if round_ % 2 == 0 else ("with", "without")
        for phase in order:
            for name, value in _phase(options, phase == "with").items():
                figures.setdefault(name, []).append(value)
        print(f"round {round_ + 1}: " + _line(figures, -1), flush=True)
    print("medians: " + _line(figures))
    _resume_check(options)
    return 0


def _phase(options: argparse.Namespace, backlog: bool) -> dict[str, float]:
    from bench import database
    from steady_queue.pauses import pause_task

    database.truncate()
    figures = {}
    if backlog:
        _enqueue("export", options.backlog)
        began = time.perf_counter()
        moved = pause_task(PAUSED)
        figures["pause_task s"] = time.perf_counter() - began
        assert moved == options.backlog, moved
        _analyze()
    label = "with" if backlog else "without"
    _enqueue("other", options.jobs)
    figures[f"claims/s {label}"] = _claim_rate(options)
    return figures


def _enqueue(name: str, count: int) -> None:
    from bench import task_pause_tasks
    from steady_queue.backend import enqueue_all

    task = getattr(task_pause_tasks, name)
    for start in range(0, count, 5000):
        enqueue_all([(task, (), {})] * min(5000, count - start))


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
    from steady_queue import storage
    from steady_queue.models import ClaimedExecution

    process, claimed, began = _process(), 0, time.perf_counter()
    while batch := storage.for_alias().claim(["*"], options.batch, process):
        claimed += len(batch)
    elapsed = time.perf_counter() - began
    assert claimed == options.jobs, claimed
    ClaimedExecution.objects.all().delete()
    return claimed / elapsed


def _resume_check(options: argparse.Namespace) -> None:
    from steady_queue.models import ReadyExecution
    from steady_queue.pauses import resume_task

    began = time.perf_counter()
    resumed = resume_task(PAUSED)
    elapsed = time.perf_counter() - began
    ids = list(
        ReadyExecution.objects.order_by("-priority", "job_id").values_list("job_id", flat=True)
    )
    in_order = ids == sorted(ids) and len(ids) == resumed == options.backlog
    print(f"resume_task: {resumed:,} jobs ready again in {elapsed:.2f} s, in order: {in_order}")


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
