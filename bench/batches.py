"""What batches and workflows cost: enqueueing, statements per finished job, draining.

    python bench/batches.py                          # PostgreSQL; --db mysql or sqlite too
    python bench/batches.py --jobs 100000 --steps 1000 --drain 10000 --rounds 3

1. enqueue: ``--jobs`` no-op jobs with ``enqueue_all`` in chunks of 1,000, inside one
   ``batch()`` block against without one, in jobs/s.
2. statements per finished job: this process claims and runs ``--sample`` jobs, one at
   a time, through the storage's claim and ``perform`` as a worker thread does, and
   counts each job's statements (claim included) with CaptureQueriesContext: jobs of no
   batch, of a batch of 1,000 and of a batch of ``--jobs``. A batch's last job, whose
   end enqueues the callback, is counted apart (in the batch of 1,000, run to its end).
3. workflow: a root step, ``--steps`` parallel steps after it and a last step after all
   of them: the enqueue time, and the statements of each step's end (the root's end
   makes ``--steps`` steps due, the last parallel step's end the last step).
4. drain: the real ``manage.py steady_queue`` (two worker processes of five threads,
   ``bench.configs.W2x5``) drains ``--drain`` no-op jobs of one batch against as many
   of no batch; jobs/s from the first start to the last finish.

Timed figures are medians of ``--rounds`` rounds, the two sides of each comparison
taking turns; statement counts do not vary from round to round and are counted once.
The database (``--name``, default sq_bench_batches) is dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHUNK = 1_000  # jobs per enqueue_all call
DEADLINE = 900.0  # seconds a drain may take before the benchmark gives up


def main() -> int:
    options = _parse_args()
    from bench import database

    database.prepare(options.db, options.name)
    from bench import system

    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{options.rounds} rounds; figures are medians", flush=True)
    _enqueue(options)
    _statements(options)
    _workflow(options)
    _drain(options)
    return 0


# 1. Enqueue ------------------------------------------------------------------------------


def _enqueue(options: argparse.Namespace) -> None:
    rates = _taking_turns(
        options.rounds,
        {
            "no batch": lambda: _enqueue_rate(options.jobs, in_batch=False),
            "one batch": lambda: _enqueue_rate(options.jobs, in_batch=True),
        },
    )
    for name, runs in rates.items():
        _print(f"enqueue {options.jobs:,} jobs (enqueue_all of {CHUNK:,}), {name}", runs, "jobs/s")


def _enqueue_rate(count: int, *, in_batch: bool) -> float:
    from bench import database

    database.truncate()
    started = time.perf_counter()
    _enqueue_jobs(count, in_batch=in_batch)
    return count / (time.perf_counter() - started)


def _enqueue_jobs(count: int, *, in_batch: bool) -> None:
    from bench.batch_tasks import batch_done
    from bench.tasks import noop
    from steady_queue.backend import enqueue_all
    from steady_queue.batches import batch

    def chunks() -> None:
        for start in range(0, count, CHUNK):
            enqueue_all([(noop, (), {})] * min(CHUNK, count - start))

    if not in_batch:
        return chunks()
    with batch(on_finish=batch_done, description=f"bench {count:,}"):
        chunks()


# 2. Statements per finished job ----------------------------------------------------------


def _statements(options: argparse.Namespace) -> None:
    cases = [("no batch", options.jobs, False), ("a batch of 1,000", 1_000, True)]
    cases.append((f"a batch of {options.jobs:,}", options.jobs, True))
    for name, count, in_batch in cases:
        counts = _counted_run(count, in_batch=in_batch, sample=min(options.sample, count - 1))
        print(
            f"statements per finished job, {name}: {statistics.mean(counts):.2f} "
            f"(min {min(counts)}, max {max(counts)}, over {len(counts):,} jobs)"
        )
    last = _counted_run(1_000, in_batch=True, sample=1_000)[-1]
    print(f"statements of a batch's last job (its end enqueues the callback): {last}", flush=True)


def _counted_run(count: int, *, in_batch: bool, sample: int) -> list[int]:
    """Enqueue ``count`` jobs; run ``sample`` of them here; each one's statement count."""
    from bench import database

    database.truncate()
    _enqueue_jobs(count, in_batch=in_batch)
    _analyze()
    return _run_counted(sample)


def _run_counted(limit: int | None = None) -> list[int]:
    """Claim and run jobs one at a time, as a worker thread; the statements of each."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from steady_queue import storage
    from steady_queue.models import Process
    from steady_queue.runner.perform import perform

    process = Process.register(kind=Process.Kind.WORKER, name="bench", pid=os.getpid())
    counts = []
    while limit is None or len(counts) < limit:
        connection.queries_log.clear()  # its 9,000 entries would overflow in a long run
        with CaptureQueriesContext(connection) as captured:
            claimed = storage.claim(["*"], 1, process)
            if not claimed:
                break
            perform(claimed[0])
        counts.append(len(captured.captured_queries))
    process.delete()
    return counts


def _analyze() -> None:
    """Give the planner statistics, as autovacuum would soon (a test server may lack it)."""
    from django.db import connection

    statement = {"postgresql": "ANALYZE", "sqlite": "ANALYZE"}.get(connection.vendor)
    statement = statement or "ANALYZE TABLE steady_queue_jobs, steady_queue_ready_executions"
    with connection.cursor() as cursor:
        cursor.execute(statement)


# 3. A fan-out / fan-in workflow ----------------------------------------------------------


def _workflow(options: argparse.Namespace) -> None:
    steps = options.steps
    times = [_workflow_enqueue_seconds(steps) for _ in range(options.rounds)]
    _print(f"enqueue a workflow of 1 + {steps:,} + 1 steps", times, "s")
    counts = _run_counted()
    assert len(counts) == steps + 2, f"{len(counts)} steps ran, not {steps + 2}"
    parallel = counts[1:-1]
    print(
        f"statements per finished step: {sum(counts) / len(counts):.2f} on average; "
        f"the root's end (making {steps:,} due) {counts[0]}; a parallel step "
        f"{statistics.median(parallel):.0f} (median), {max(parallel)} (most: the one "
        f"making the last step due); the last step {counts[-1]}",
        flush=True,
    )


def _workflow_enqueue_seconds(steps: int) -> float:
    from bench import database
    from bench.batch_tasks import part
    from steady_queue.workflows import Workflow

    database.truncate()
    wf = Workflow("fan-out, fan-in")
    root = wf.add(part, args=(0,), name="root")
    middle = [wf.add(part, args=(n,), after=[root], name=f"part-{n}") for n in range(steps)]
    wf.add(part, args=(-1,), after=middle, name="last")
    started = time.perf_counter()
    wf.enqueue()
    return time.perf_counter() - started


# 4. Drain with the real processes --------------------------------------------------------


def _drain(options: argparse.Namespace) -> None:
    rates = _taking_turns(
        options.rounds,
        {
            "no batch": lambda: _drain_rate(options.drain, in_batch=False),
            "one batch": lambda: _drain_rate(options.drain, in_batch=True),
        },
    )
    for name, runs in rates.items():
        _print(f"drain {options.drain:,} no-op jobs, W2x5, {name}", runs, "jobs/s")


def _drain_rate(count: int, *, in_batch: bool) -> float:
    from django.db import connection
    from django.utils.dateparse import parse_datetime

    from bench import database, processes
    from bench.tasks import noop
    from steady_queue.models import Batch, Job

    database.truncate()
    _enqueue_jobs(count, in_batch=in_batch)
    _analyze()
    ended = Job.objects.filter(finished_at__isnull=True)
    with processes.running(processes.steady_queue("2x5")):
        _wait(lambda: not ended.exists())
    connection.close()
    if in_batch:
        assert Batch.objects.get().finished_at is not None, "the batch did not finish"
    rows = Job.objects.filter(task_path=noop.module_path).values_list("attempts", "finished_at")
    starts = [parse_datetime(attempts[0]["started_at"]) for attempts, _ in rows]
    return count / (max(f for _, f in rows) - min(starts)).total_seconds()


def _wait(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the drain did not end within {DEADLINE:.0f} s")
        time.sleep(0.1)


# Reporting -------------------------------------------------------------------------------


def _taking_turns(rounds: int, sides: dict[str, Callable[[], float]]) -> dict[str, list]:
    """Each side once per round, in turn, so that the machine's drift hits them alike."""
    runs: dict[str, list] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, measure in sides.items():
            runs[name].append(measure())
    return runs


def _print(name: str, runs: list[float], unit: str) -> None:
    every = ", ".join(f"{run:,.2f}" for run in runs)
    print(f"{name}: {statistics.median(runs):,.2f} {unit} ({every})", flush=True)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["postgres", "mysql", "sqlite"], default="postgres")
    parser.add_argument("--name", default="sq_bench_batches")
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs of the big batch")
    parser.add_argument("--sample", type=int, default=500, help="jobs run to count statements")
    parser.add_argument("--steps", type=int, default=1_000, help="parallel workflow steps")
    parser.add_argument("--drain", type=int, default=10_000, help="jobs drained per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians)")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
