"""How busy a hot concurrency key keeps its slots: ``to=2``, 1,000 jobs of 10 ms.

    python bench/hot_key.py                       # PostgreSQL; --db mysql or sqlite too
    python bench/hot_key.py --jobs 300 --rounds 5 --configs 1x3,2x5

Enqueues ``--jobs`` jobs of ``bench.hot_key_tasks.hot`` (``limits_concurrency(key="hot",
to=2)``, each sleeping ``--work`` seconds) into empty tables, then runs the real
``manage.py steady_queue`` (each ``--configs`` entry, processes x threads, with one
dispatcher) until they are all finished. The slots are busy while a job of the key runs:
the task returns when its work began and ended, and busy = the sum of the work / (2 x
(last end - first beginning)). Every hand-off from a finishing job to the next blocked
one (recording the outcome, moving the slot, claiming, starting the next) is time a
slot stands idle. Each
figure is the median of ``--rounds`` rounds, the configurations taking turns.
The database (``--name``, default sq_bench_hot_key) is dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SLOTS = 2


def main() -> int:
    options = _parse_args()
    from bench import database

    database.prepare(options.db, options.name)
    from bench import system

    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{options.jobs:,} jobs of {options.work * 1000:.0f} ms, to={SLOTS}", flush=True)
    configs = options.configs.split(",")
    rounds: dict[str, list[dict[str, float]]] = {config: [] for config in configs}
    for number in range(options.rounds):
        for config in configs if number % 2 == 0 else reversed(configs):
            figures = _round(options, config)
            rounds[config].append(figures)
            print(
                f"  {config}: busy {figures['busy']:.1%}, hand-off median "
                f"{figures['hand-off ms']:.1f} ms; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print("\nmedians")
    for config, runs in rounds.items():
        busy = statistics.median(run["busy"] for run in runs)
        hand_off = statistics.median(run["hand-off ms"] for run in runs)
        print(f"  {config}: slots busy {busy:.1%}, hand-off {hand_off:.1f} ms")
    return 0


def _round(options: argparse.Namespace, config: str) -> dict[str, float]:
    from django.db import connection

    from bench import database, processes
    from bench.hot_key_tasks import hot
    from steady_queue.backend import enqueue_all
    from steady_queue.models import Job

    database.truncate()
    enqueue_all([(hot, (options.work,), {})] * options.jobs)
    command = ["steady_queue", "--config", f"bench.configs.W{config}d", "--skip-recurring"]
    with processes.running([command]):
        deadline = time.monotonic() + options.timeout
        while Job.objects.filter(finished_at__isnull=True).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{options.jobs} jobs not finished in {options.timeout} s")
            time.sleep(0.2)
    runs = _runs()
    connection.close()
    return _figures(runs)


def _runs() -> list[tuple[float, float]]:
    """When each job's work began and ended, in order of beginning (the task tells)."""
    from steady_queue.models import Job

    return sorted(tuple(value) for value in Job.objects.values_list("return_value", flat=True))


def _figures(runs: list[tuple[float, float]]) -> dict[str, float]:
    """Busy fraction of the slots, and the median gap between an end and the next beginning."""
    span = max(end for _, end in runs) - runs[0][0]
    busy = sum(end - start for start, end in runs) / (SLOTS * span)
    # Each start after the first two waited for a slot: the gap since the latest finish
    # before it is the hand-off.
    finishes = sorted(end for _, end in runs)
    gaps = []
    for start, _ in runs[SLOTS:]:
        before = [end for end in finishes if end <= start]
        if before:
            gaps.append(start - before[-1])
    return {"busy": busy, "hand-off ms": statistics.median(gaps) * 1000 if gaps else 0.0}


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["postgres", "mysql", "sqlite"], default="postgres")
    parser.add_argument("--name", default="sq_bench_hot_key")
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--work", type=float, default=0.01, help="seconds each job runs")
    parser.add_argument("--configs", default="1x3,2x5", help="processes x threads, each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300)
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
