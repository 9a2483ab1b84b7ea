"""The cost of a running job's log capture, per line: with and without it, in one run.

    python bench/job_logs.py --db sqlite              # about 20 seconds
    python bench/job_logs.py --db postgres --rounds 21 --lines 5000

Each round times ``--lines`` calls of ``logger.info("line %d", n)`` three ways, one
after the other: without the capture (``run_logs`` not installed), with it installed
but outside any run (a record of another thread of the worker), and inside a run
(``run_logs.capture``: the line is kept in memory). Then the run's buffer is written
(``run_logs.write``: one insert), timed apart. Every figure is the median over
``--rounds`` rounds, in nanoseconds per line; the root logger has one NullHandler, so
the records are made and handled in all three. The database (``--name``, default
sq_bench_logs) is dropped and created again.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    options = _parse_args()
    os.environ["SQ_BENCH_DB"], os.environ["SQ_BENCH_NAME"] = options.db, options.name
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.observability_settings"
    from bench import database, system

    database.recreate()
    import django

    django.setup()
    database.migrate()
    print(f"{os.cpu_count()} cores, {system._database()}, Django {django.get_version()}")
    figures = _measure(options.rounds, options.lines)
    print(f"\n{options.lines} lines a round, median of {options.rounds} rounds, ns per line")
    for name, value in figures.items():
        print(f"{name:<44} {value:>10.0f}")
    cost = figures["inside a run (kept in memory)"] - figures["without the capture"]
    print(f"{'cost of capturing a line (in the task)':<44} {cost:>10.0f}")
    return 0


def _measure(rounds: int, lines: int) -> dict[str, float]:
    from steady_queue.models import Job
    from steady_queue.runner import run_logs

    root = logging.getLogger()
    root.handlers[:] = [logging.NullHandler()]
    root.setLevel(logging.INFO)
    log = logging.getLogger("bench.job_logs")
    job = Job.objects.create(task_path="bench.tasks.noop", queue_name="default")
    times: dict[str, list[float]] = {
        "without the capture": [],
        "installed, outside a run": [],
        "inside a run (kept in memory)": [],
        "writing them (run_logs.write, one insert)": [],
    }
    import steady_queue

    steady_queue.job_log_max_lines = lines  # the cap drops nothing: every line is written
    steady_queue.job_log_max_bytes = lines * 100
    for attempt in range(1, rounds + 1):
        times["without the capture"].append(_per_line(log, lines))
        run_logs.install()
        times["installed, outside a run"].append(_per_line(log, lines))
        job.attempts = [{}] * (attempt - 1)  # each round its own attempt: numbers start at 1
        with run_logs.capture(job) as run:
            times["inside a run (kept in memory)"].append(_per_line(log, lines))
            began = time.perf_counter_ns()
            assert run_logs.write([run]) == lines
            times["writing them (run_logs.write, one insert)"].append(
                (time.perf_counter_ns() - began) / lines
            )
        run_logs.uninstall()
        root.setLevel(logging.INFO)
    return {name: statistics.median(values) for name, values in times.items()}


def _per_line(log: logging.Logger, lines: int) -> float:
    began = time.perf_counter_ns()
    for number in range(lines):
        log.info("line %d", number)
    return (time.perf_counter_ns() - began) / lines


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["postgres", "mysql", "sqlite"], default="sqlite")
    parser.add_argument("--name", default="sq_bench_logs")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--lines", type=int, default=2000)
    return parser.parse_args()


if __name__ == "__main__":
    raise SystemExit(main())
