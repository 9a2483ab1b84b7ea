"""The noisy neighbour: one tenant's flood against four tenants' trickle, with and
without ``@fair``, in the same run.

    python bench/noisy_neighbour.py                        # PostgreSQL; --db mysql or sqlite
    python bench/noisy_neighbour.py --jobs 5000 --rounds 3 --work 0.005
    python bench/noisy_neighbour.py --smoke                # a few hundred jobs, one round
    python bench/noisy_neighbour.py --fifo-against 84bb2a6 --fifo-rounds 5  # + FIFO A/B

Each round runs two modes in alternating order (interleaved, so that a drift of the
shared machine falls on both alike): ``plain`` (the FIFO path, ``bench.
noisy_neighbour_tasks.plain``) and ``fair`` (``shared``: ``@fair`` keyed by tenant).
In each mode, the real ``manage.py steady_queue`` (``--configs``, processes x threads)
runs while:

1. baseline: tenants B-E each enqueue one job every ``--interval`` (50 ms) for
   ``--baseline`` seconds on an empty queue (their pickup latency with nobody ahead),
   after a second of the same left out (the workers' first polls);
2. flood: tenant A enqueues ``--jobs`` jobs at once (``enqueue_all`` in chunks of
   5,000), then B-E enqueue as before until A's backlog is drained.

Figures per mode: the time A's ``enqueue_all`` calls took, B-E pickup latency
p50/p95/p99 (the job's first line minus its enqueue), the empty-queue p95, the p95 of
B-E's enqueue calls themselves (during the flood and on the empty queue), the CPU a
job of the drain cost the workers and the database server, A's
throughput (its jobs / the span of their runs) and the total drain rate (every job of
the flood / from the first start to the last end); the median of ``--rounds`` rounds.
Then one saturation run: tenants X, Y and Z of ``weighted`` (weights 1:2:4) with
backlogs in proportion (``--saturation`` jobs for X), and the shares of starts each got
in every ``--window``-second window while all three still had jobs waiting, and the
worst deviation from 1:2:4 over them.

``--fifo-against REV`` adds the same-run A/B of the FIFO path: jobs of a task without
``@fair`` (bench/tasks.py, where no fair task is declared) enqueued one by one and in
bulk, drained, and picked up by an idle worker, on ``REV`` (the commit before fair
share, 84bb2a6) and on this tree's commit, in interleaved rounds (bench/compare.py),
with the medians and the ratio new/old. The database (``--name``, default
sq_bench_noisy) is dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TASKS = "bench.noisy_neighbour_tasks"
TRICKLE = ("B", "C", "D", "E")
MODES = ("plain", "fair")
CHUNK = 5_000
# Seconds of B-E before the baseline, not measured: the workers' first polls.
WARM_UP = 1.0


def main() -> int:
    options = _parse_args()
    from bench import database, system

    database.prepare(options.db, options.name)
    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if options.only_saturation:
        _saturation(options)
        return 0
    if options.only_fifo:
        return _fifo_against(options)
    print(
        f"A: {options.jobs:,} jobs of {options.work * 1000:g} ms at once; B-E: one job each "
        f"every {options.interval * 1000:g} ms; workers {options.config}; "
        f"{options.rounds} round(s)",
        flush=True,
    )
    figures: dict[str, dict[str, list[float]]] = {mode: {} for mode in MODES}
    for number in range(options.rounds):
        for mode in MODES if number % 2 == 0 else reversed(MODES):
            for name, value in _round(options, mode).items():
                figures[mode].setdefault(name, []).append(value)
            print(f"  round {number + 1}, {mode}: {_line(figures[mode], -1)}", flush=True)
    print(f"\nmedians of {options.rounds} round(s)")
    for mode in MODES:
        print(f"  {mode}: {_line(figures[mode])}")
    _report_ratios(figures)
    _saturation(options)
    return _fifo_against(options) if options.fifo_against else 0


def _fifo_against(options: argparse.Namespace) -> int:
    """The FIFO path on ``--fifo-against`` and on this tree's commit (bench/compare.py:
    each through its own code, in rounds alternating which goes first)."""
    root = Path(__file__).resolve().parent.parent
    new = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    print(f"\nthe FIFO path: {options.fifo_against} (before fair share) against {new}", flush=True)
    command = [
        sys.executable,
        str(root / "bench" / "compare.py"),
        options.fifo_against,
        new,
        f"--db={options.db}",
        f"--name={options.name}_fifo",
        f"--rounds={options.fifo_rounds}",
        f"--jobs={options.fifo_jobs}",
        f"--single-jobs={options.fifo_jobs // 5}",
        f"--config={options.config}",
    ]
    return subprocess.run(command, cwd=root).returncode


# One mode of one round ---------------------------------------------------------------


def _round(options: argparse.Namespace, mode: str) -> dict[str, float]:
    from bench import database, processes

    task = _task("plain" if mode == "plain" else "shared")
    database.truncate()
    command = ["steady_queue", "--config", f"bench.configs.W{options.config}", "--skip-recurring"]
    with processes.running([command]) as (supervisor,):
        _wait_for_workers()
        _trickle_for(task, options, WARM_UP)  # the workers' first polls and connections
        _wait_until_finished(options.timeout)
        started = time.time()
        quiet = _trickle_for(task, options, options.baseline)
        baseline = (started, quiet.ended)
        _wait_until_finished(options.timeout)
        began = time.time()
        flood = _flood(task, options)
        enqueue_seconds = time.time() - began
        cpu_before, finished_before = _cpu(supervisor.pid), _finished()
        stream = _Trickle(task, options)
        stream.start()
        _wait_until_finished(options.timeout, ids=flood)
        cpu_after, finished_after = _cpu(supervisor.pid), _finished()
        stream.stop()
        _wait_until_finished(options.timeout)
    done = max(finished_after - finished_before, 1)
    return {
        **_figures(baseline, began),
        # What a job of the drain cost the workers and the database server (CPU): the
        # rates above are what the loaded machine left them.
        "worker CPU ms/job": 1000 * (cpu_after[0] - cpu_before[0]) / done,
        "database CPU ms/job": 1000 * (cpu_after[1] - cpu_before[1]) / done,
        # Where B-E's pickup latency goes: the enqueue call itself (on SQLite, mostly the
        # wait for the write lock), counted in the latency since the job's created_at.
        "B-E enqueue call p95 ms": _percentile(stream.calls, 95) * 1000,
        "empty-queue enqueue call p95 ms": _percentile(quiet.calls, 95) * 1000,
        "A enqueue s": enqueue_seconds,
    }


def _cpu(supervisor: int) -> tuple[float, float]:
    """CPU seconds so far of the workers (the supervisor's tree) and the database server
    (bench/compare.py's count; SQLite's work is the workers' own)."""
    from bench.compare import _cpu as cpu

    return cpu(supervisor)


def _finished() -> int:
    from steady_queue.models import Job

    return Job.objects.filter(finished_at__isnull=False).count()


def _flood(task, options: argparse.Namespace) -> tuple[int, int]:
    """Enqueue A's jobs; return the first and last of their ids (nothing else is enqueued
    meanwhile: the trickle starts after)."""
    from steady_queue.backend import enqueue_all

    ids = []
    for start in range(0, options.jobs, CHUNK):
        count = min(CHUNK, options.jobs - start)
        ids += [int(result.id) for result in enqueue_all([(task, ("A", options.work), {})] * count)]
    return min(ids), max(ids)


class _Trickle(threading.Thread):
    """B-E, one job each every ``interval`` seconds, until stopped."""

    def __init__(self, task, options: argparse.Namespace):
        super().__init__(daemon=True)
        self.task, self.options, self.halt = task, options, threading.Event()
        self.calls: list[float] = []  # seconds each enqueue call took
        self.ended = 0.0

    def run(self) -> None:
        from django.db import connection

        tick = time.monotonic()
        try:
            while not self.halt.is_set():
                for tenant in TRICKLE:
                    called = time.perf_counter()
                    self.task.enqueue(tenant, self.options.work)
                    self.calls.append(time.perf_counter() - called)
                tick += self.options.interval
                self.halt.wait(max(tick - time.monotonic(), 0.0))
        finally:
            connection.close()

    def stop(self) -> None:
        self.halt.set()
        self.join()


def _trickle_for(task, options: argparse.Namespace, seconds: float) -> _Trickle:
    """Run B-E's trickle alone for ``seconds``; return it, ``ended`` the time it ended
    (a boundary)."""
    stream = _Trickle(task, options)
    stream.start()
    time.sleep(seconds)
    stream.stop()
    stream.ended = time.time()
    return stream


def _figures(baseline: tuple[float, float], flood_began: float) -> dict[str, float]:
    runs = _runs()
    empty = [run for run in runs if baseline[0] <= run["enqueued"] < baseline[1]]
    flood = [run for run in runs if run["enqueued"] >= flood_began]
    trickle = [run["latency"] for run in flood if run["tenant"] != "A"]
    tenant_a = [run for run in flood if run["tenant"] == "A"]
    return {
        "B-E p50 ms": _percentile(trickle, 50) * 1000,
        "B-E p95 ms": _percentile(trickle, 95) * 1000,
        "B-E p99 ms": _percentile(trickle, 99) * 1000,
        "empty-queue B-E p95 ms": _percentile([run["latency"] for run in empty], 95) * 1000,
        "A jobs/s": _rate(tenant_a),
        "drain jobs/s": _rate(flood),
    }


def _runs() -> list[dict]:
    """Each finished job: its tenant, when it was enqueued, began and ended, its latency."""
    from steady_queue.models import Job

    runs = []
    rows = Job.objects.filter(finished_at__isnull=False).values_list(
        "arguments", "created_at", "return_value"
    )
    for arguments, created_at, (began, ended) in rows.iterator(chunk_size=5_000):
        enqueued = created_at.timestamp()
        runs.append(
            {
                "tenant": arguments["args"][0],
                "enqueued": enqueued,
                "began": began,
                "ended": ended,
                "latency": max(began - enqueued, 0.0),
            }
        )
    return runs


def _rate(runs: list[dict]) -> float:
    if not runs:
        return 0.0
    span = max(run["ended"] for run in runs) - min(run["began"] for run in runs)
    return len(runs) / span if span > 0 else 0.0


def _percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# The weighted saturation run -----------------------------------------------------------


def _saturation(options: argparse.Namespace) -> None:
    """X, Y, Z (weights 1:2:4) with backlogs 1:2:4: the shares of starts in each window."""
    from bench import database, processes
    from bench.noisy_neighbour_tasks import WEIGHTS
    from steady_queue.backend import enqueue_all

    task = _task("weighted")
    database.truncate()
    for tenant, weight in WEIGHTS.items():
        for start in range(0, options.saturation * weight, CHUNK):
            count = min(CHUNK, options.saturation * weight - start)
            enqueue_all([(task, (tenant, options.work), {})] * count)
    command = ["steady_queue", "--config", f"bench.configs.W{options.config}", "--skip-recurring"]
    with processes.running([command]):
        _wait_until_finished(options.timeout)
    windows = _windows(_runs(), options.window)
    total = sum(WEIGHTS.values())
    print(f"\nsaturation, weights X:Y:Z = 1:2:4, {options.window:g} s windows while all wait")
    worst = 0.0
    for index, counts in enumerate(windows):
        starts = sum(counts.values())
        shares = {key: counts.get(key, 0) / starts for key in WEIGHTS}
        errors = {key: shares[key] / (WEIGHTS[key] / total) - 1 for key in WEIGHTS}
        worst = max(worst, *(abs(error) for error in errors.values()))
        described = ", ".join(f"{key} {shares[key]:.1%} ({errors[key]:+.1%})" for key in WEIGHTS)
        print(f"  window {index + 1}: {starts:,} starts: {described}")
    verdict = (
        "none: make --saturation larger"
        if not windows
        else ("within" if worst <= 0.10 else "OUTSIDE")
    )
    print(
        f"  worst deviation from 1:2:4 over {len(windows)} window(s): {worst:.1%} "
        f"(target: every window within 10%: {verdict})"
    )


def _windows(runs: list[dict], width: float) -> list[dict[str, int]]:
    """Starts per tenant in consecutive windows, up to the first tenant's last start."""
    if not runs:
        return []
    first = min(run["began"] for run in runs)
    last_starts = {}
    for run in runs:
        last_starts[run["tenant"]] = max(last_starts.get(run["tenant"], 0.0), run["began"])
    end = min(last_starts.values())
    windows: list[dict[str, int]] = [{} for _ in range(int((end - first) // width))]
    for run in runs:
        index = int((run["began"] - first) // width)
        if index < len(windows):
            windows[index][run["tenant"]] = windows[index].get(run["tenant"], 0) + 1
    return windows


# Helpers -------------------------------------------------------------------------------


def _task(name: str):
    from bench import noisy_neighbour_tasks

    return getattr(noisy_neighbour_tasks, name)


def _wait_for_workers(timeout: float = 60.0) -> None:
    from steady_queue.models import Process

    deadline = time.monotonic() + timeout
    while not Process.objects.filter(kind=Process.Kind.WORKER).exists():
        if time.monotonic() > deadline:
            raise TimeoutError("no worker registered")
        time.sleep(0.1)


def _wait_until_finished(timeout: float, ids: tuple[int, int] | None = None) -> None:
    """Wait for every job (or those with ids in the range ``ids``) to finish."""
    from steady_queue.models import Job

    pending = Job.objects.filter(finished_at__isnull=True)
    if ids is not None:
        pending = pending.filter(pk__range=ids)
    deadline = time.monotonic() + timeout
    while pending.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs not finished in {timeout} s")
        time.sleep(0.2)


def _report_ratios(figures: dict[str, dict[str, list[float]]]) -> None:
    plain, fair = (
        {name: statistics.median(values) for name, values in figures[mode].items()}
        for mode in MODES
    )
    print(
        f"  fair B-E p95 / its empty-queue p95: "
        f"{fair['B-E p95 ms'] / max(fair['empty-queue B-E p95 ms'], 1e-9):.2f}x "
        f"(plain: {plain['B-E p95 ms'] / max(plain['empty-queue B-E p95 ms'], 1e-9):.1f}x)"
    )
    print(
        f"  fair drain / plain drain: "
        f"{fair['drain jobs/s'] / max(plain['drain jobs/s'], 1e-9):.2f}; load {os.getloadavg()}"
    )
    # The same ratio within each round (its two modes ran back to back): what a drift
    # of the shared machine between rounds moves least.
    drains = zip(figures["fair"]["drain jobs/s"], figures["plain"]["drain jobs/s"], strict=True)
    rounds = [fair_drain / max(plain_drain, 1e-9) for fair_drain, plain_drain in drains]
    print(
        f"  fair drain / plain drain, round by round: {', '.join(f'{r:.2f}' for r in rounds)}; "
        f"median {statistics.median(rounds):.2f}"
    )


def _line(figures: dict[str, list[float]], index: int | None = None) -> str:
    parts = []
    for name, values in figures.items():
        value = statistics.median(values) if index is None else values[index]
        parts.append(f"{name} {value:,.1f}")
    return ", ".join(parts)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["postgres", "mysql", "sqlite"], default="postgres")
    parser.add_argument("--name", default="sq_bench_noisy")
    parser.add_argument("--jobs", type=int, default=50_000, help="tenant A's flood")
    parser.add_argument("--work", type=float, default=0.0, help="seconds each job runs (0.005)")
    parser.add_argument("--interval", type=float, default=0.05, help="B-E's enqueue interval")
    parser.add_argument("--baseline", type=float, default=5.0, help="seconds of B-E alone")
    parser.add_argument("--saturation", type=int, default=5_000, help="X's backlog (Y 2x, Z 4x)")
    parser.add_argument("--window", type=float, default=10.0, help="seconds per share window")
    parser.add_argument("--config", default="2x5", help="worker processes x threads")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--only-saturation", action="store_true", help="the 1:2:4 run alone")
    parser.add_argument("--fifo-against", metavar="REV", help="A/B of the FIFO path vs REV")
    parser.add_argument("--fifo-rounds", type=int, default=5)
    parser.add_argument("--fifo-jobs", type=int, default=3_000, help="jobs per FIFO drain")
    parser.add_argument("--only-fifo", metavar="REV", help="the FIFO A/B vs REV alone")
    options = parser.parse_args()
    if options.only_fifo:
        options.fifo_against = options.only_fifo
    if options.smoke:
        options.jobs, options.rounds, options.baseline = 300, 1, 1.0
        options.saturation, options.window = 300, 0.25
    return options


if __name__ == "__main__":
    raise SystemExit(main())
