"""Compare two commits of Steady Queue on the same machine, in the same run.

    python bench/compare.py HEAD~3 HEAD --db postgres --rounds 3

Each commit is checked out into a temporary git worktree. Rounds alternate which
commit goes first, and each round measures both with the same plan (single and bulk
enqueue, a drain with the real ``manage.py steady_queue``, pickup latency of an idle
worker, and a second drain for what a job costs: worker and database CPU, and on
PostgreSQL the write transactions), each through the commit's own code and its own
bench/measures.py: a change to the engine is compared, not a change to the benchmark.
Prints every run and the median of each figure per commit, with the ratio new/old.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = {  # name: higher is better
    "single enqueue, jobs/s": True,
    "bulk enqueue, jobs/s": True,
    "drain, jobs/s": True,
    "pickup latency p50, ms": False,
    "pickup latency p90, ms": False,
    "drain, worker CPU per job, ms": False,
    "drain, database CPU per job, ms": False,
    "drain, transactions per job": False,
}


def main() -> int:
    options = _parse_args()
    if options.measure:
        print(json.dumps(_measure(options)))
        return 0
    runs: dict[str, list[dict]] = {options.old: [], options.new: []}
    with tempfile.TemporaryDirectory(prefix="sq-compare-") as scratch:
        trees = {rev: _worktree(rev, Path(scratch) / f"tree{i}") for i, rev in enumerate(runs)}
        try:
            for round_ in range(options.rounds):
                order = list(runs) if round_ % 2 == 0 else list(reversed(runs))
                for rev in order:
                    figures = _run_in(trees[rev], options)
                    runs[rev].append(figures)
                    print(f"round {round_ + 1} {rev}: {figures}", flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
    print(_table(options, runs))
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", nargs="?", default="HEAD~1")
    parser.add_argument("new", nargs="?", default="HEAD")
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--name", default="sq_compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=5_000, help="jobs per drain and bulk run")
    parser.add_argument("--single-jobs", type=int, default=1_000)
    parser.add_argument("--config", default="2x5", help="drain: processes x threads")
    parser.add_argument("--latency-samples", type=int, default=30)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def _worktree(rev: str, path: Path) -> Path:
    subprocess.run(["git", "worktree", "add", "--detach", str(path), rev], cwd=ROOT, check=True)
    return path


def _run_in(tree: Path, options: argparse.Namespace) -> dict:
    """One round of measures in ``tree``'s code (this script, run with its tree first)."""
    # The tree first (its steady_queue and bench), then the caller's path (where the
    # bench extra's packages may be installed apart).
    path = os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "SQ_COMPARE_TREE": str(tree), "PYTHONPATH": path}
    arguments = [
        sys.executable,
        __file__,
        "--measure",
        f"--db={options.db}",
        f"--name={options.name}",
        f"--jobs={options.jobs}",
        f"--single-jobs={options.single_jobs}",
        f"--config={options.config}",
        f"--latency-samples={options.latency_samples}",
    ]
    done = subprocess.run(arguments, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"measuring {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure(options: argparse.Namespace) -> dict:
    """In the tree's code: one run of each figure (the tree's own bench.measures)."""
    tree = os.environ["SQ_COMPARE_TREE"]
    sys.path.insert(0, tree)
    os.environ.update(SQ_BENCH_DB=options.db, SQ_BENCH_NAME=options.name)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    import steady_queue
    from bench import measures

    if not steady_queue.__file__.startswith(tree):
        raise SystemExit(f"imported {steady_queue.__file__}, not the tree {tree}")
    plan = measures.Plan(
        jobs=options.jobs,
        dtdb_jobs=0,
        repeat=1,
        single_jobs=options.single_jobs,
        bulk_batch=min(options.jobs, 10_000),
        finished=0,
        latency_samples=options.latency_samples,
        configs=[options.config],
    )
    # A new SQLite file grows page by page through its first thousands of jobs, and the
    # commit measured first in a round paid for it (bulk enqueue at half the rate, on
    # either commit): fill the tables once and empty them before anything is timed.
    measures._bulk(plan.jobs, plan.bulk_batch)
    database.truncate()
    single = measures._rate(plan.single_jobs, lambda: measures._single(measures.noop, plan))
    bulk = measures._rate(plan.jobs, lambda: measures._bulk(plan.jobs, plan.bulk_batch))
    drain = measures._drain_ours(plan, options.config)
    latencies, _ = measures._latencies_ours(plan, "1x3")
    return {
        "single enqueue, jobs/s": single,
        "bulk enqueue, jobs/s": bulk,
        "drain, jobs/s": drain,
        "pickup latency p50, ms": measures._ms(latencies, 50),
        "pickup latency p90, ms": measures._ms(latencies, 90),
        **_drain_cost(options.jobs, options.config),
    }


def _drain_cost(jobs: int, config: str) -> dict:
    """Another drain: the CPU per job while it runs, and the write transactions it made.

    CPU: of the worker processes (the supervisor's tree) and of the database server
    (PostgreSQL's backends of this database, MySQL/MariaDB's server process; SQLite's
    work is the workers' own), over the jobs finished between 15% and 75% of the drain.
    Write transactions (PostgreSQL): the transaction ids the drain used, each a commit
    that waits for its WAL flush. They are the server's: run nothing else beside it.
    """
    from bench import database, measures, processes
    from steady_queue.models import Job

    database.truncate()
    measures._bulk(jobs, min(jobs, 10_000))
    unfinished = Job.objects.filter(finished_at__isnull=True)
    before = _transaction_id()
    with processes.running(processes.steady_queue(config)) as (supervisor,):
        marks = []
        for share in (0.15, 0.75, 1.0):
            while (left := unfinished.count()) > jobs * (1 - share):
                time.sleep(0.005)
            marks.append((jobs - left, _cpu(supervisor.pid)))
    (done_a, (workers_a, server_a)), (done_b, (workers_b, server_b)) = marks[:2]
    figures = {
        "drain, worker CPU per job, ms": 1000 * (workers_b - workers_a) / (done_b - done_a),
        "drain, database CPU per job, ms": 1000 * (server_b - server_a) / (done_b - done_a),
    }
    if before is not None:  # the polls above read only: they took no transaction id
        figures["drain, transactions per job"] = (_transaction_id() - before - 1) / jobs
    return figures


def _transaction_id() -> int | None:
    """A new transaction id on PostgreSQL (this call takes one), else None."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT txid_current()")
        return cursor.fetchone()[0]


def _cpu(root: int) -> tuple[float, float]:
    """CPU seconds so far of the process tree at ``root``, and of the database server."""
    from django.db import connection

    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(stat[1]), []).append(int(entry.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending += children.get(pid, [])
    server: list[int] = []
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            server = [row[0] for row in cursor.fetchall()]
    elif connection.vendor == "mysql":
        server = [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/comm") if _is_mysql(p)]
    return _seconds(tree), _seconds(server)


def _is_mysql(comm: Path) -> bool:
    try:
        return comm.read_text().strip() in {"mariadbd", "mysqld"}
    except OSError:
        return False


def _seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        total += (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _table(options: argparse.Namespace, runs: dict[str, list[dict]]) -> str:
    old, new = options.old, options.new
    lines = [
        f"\n{options.db}, {os.cpu_count()} cores, {options.rounds} interleaved rounds, "
        f"drain {options.jobs:,} jobs with {options.config}; medians\n",
        f"| figure | {old} | {new} | new/old |",
        "|---|---:|---:|---:|",
    ]
    for name, higher in FIGURES.items():
        if any(name not in run for run in runs[old] + runs[new]):
            continue  # measured on PostgreSQL only, or not by this version
        before = statistics.median(run[name] for run in runs[old])
        after = statistics.median(run[name] for run in runs[new])
        ratio = after / before if before else float("nan")
        better = "better" if (ratio > 1) == higher else "worse"
        lines.append(f"| {name} | {_figure(before)} | {_figure(after)} | {ratio:.2f} ({better}) |")
    return "\n".join(lines)


def _figure(value: float) -> str:
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"


if __name__ == "__main__":
    sys.exit(main())
