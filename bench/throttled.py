"""What throttled jobs cost the database: 10,000 of them against none, and their release.

    python bench/throttled.py                          # PostgreSQL; --db mysql or sqlite too
    python bench/throttled.py --seconds 20 --rounds 5

Runs the real ``manage.py steady_queue`` (one dispatcher and two worker processes of
three threads, default polling intervals: ``bench.configs.W2x3d``) and counts the
database work it does per second in each phase of a round, each ``--seconds`` long:

1. idle: no jobs at all (the baseline);
2. trickle: ``--trickle`` jobs of an unlimited task enqueued per second;
3. throttled: ``--jobs`` jobs of a task limited to 1 start per minute, enqueued with
   ``enqueue_all`` just before the phase; nothing else;
4. throttled + trickle: both;
5. release: ``--jobs`` more jobs of a task limited to 50 starts per second, enqueued
   just before the phase: how fast they start, and the statements per started job.

Counted: every statement the supervisor's processes send through Django, by process
(``bench/statements.py``); on PostgreSQL, the benchmark database's transactions
(committed or rolled back), rows read (tup_returned + tup_fetched) and sessions opened,
from pg_stat_database (pg_stat_statements would need shared_preload_libraries); on
MySQL/MariaDB, SHOW GLOBAL STATUS, which is server-wide: run nothing else beside it.
The server's counts include the benchmark's own enqueues (the trickle). Each figure
is the median of ``--rounds`` rounds, each from empty tables with a new supervisor.
The database (``--name``, default sq_bench_throttled) is dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETTLE = 5.0  # seconds after a start or an enqueue before a phase begins
# After each enqueue_all, as autovacuum would soon analyze (a test server may run
# without it, and a planner without statistics may scan the 10,000 jobs).
ANALYZE = {
    "postgresql": ["ANALYZE"],
    "mysql": ["ANALYZE TABLE steady_queue_jobs, steady_queue_throttled_executions"],
    "sqlite": ["ANALYZE"],
}
SERVER = {
    "postgresql": (
        "SELECT xact_commit + xact_rollback, tup_returned + tup_fetched, sessions "
        "FROM pg_stat_database WHERE datname = current_database()"
    ),
    "mysql": (
        "SHOW GLOBAL STATUS WHERE Variable_name IN "
        "('Questions', 'Com_select', 'Com_insert', 'Com_update', 'Com_delete', 'Connections')"
    ),
}
COLUMNS = {
    "postgresql": ["transactions", "rows read", "sessions"],
    "mysql": ["Questions", "Com_select", "writes", "Connections"],
    "sqlite": [],
}


def main() -> int:
    options = _parse_args()
    from bench import database

    database.prepare(options.db, options.name)
    from bench import statements, system

    counter = statements.Counter()
    counter.start()
    # Read by bench/settings.py in the supervisor's processes only: this one is not counted.
    os.environ["SQ_BENCH_COUNT_PORT"] = str(counter.port)
    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{options.jobs:,} throttled jobs, {options.seconds:.0f} s phases, W2x3d", flush=True)
    rounds = [_round(options, counter) for _ in range(options.rounds)]
    _report(rounds)
    return 0


def _round(options: argparse.Namespace, counter) -> dict[str, dict[str, float]]:
    from django.db import connection

    from bench import database, processes
    from bench.throttled_tasks import fifty_a_second, once_a_minute, unlimited

    database.truncate()
    phases = {}
    with processes.running(processes.steady_queue("2x3d")):
        _wait_for_processes(started=time.monotonic())
        phases["idle"] = _phase(options, counter)
        phases["trickle"] = _phase(options, counter, trickle=unlimited)
        _enqueue_all(once_a_minute, options)
        phases["throttled"] = _phase(options, counter)
        phases["throttled + trickle"] = _phase(options, counter, trickle=unlimited)
        phases["throttled"]["figures"] |= _throttled(once_a_minute)
        _enqueue_all(fifty_a_second, options)
        phases["release"] = _phase(options, counter)
        phases["release"]["figures"] |= _released(fifty_a_second)
        kinds = _kinds()
    connection.close()
    figures = {name: _rates(phase, kinds) for name, phase in phases.items()}
    print(_line(len(phases), figures), flush=True)
    return figures


def _wait_for_processes(*, started: float) -> None:
    from django.db import connection

    from steady_queue.models import Process

    while Process.objects.filter(kind__in=["Worker", "Dispatcher"]).count() < 3:
        if time.monotonic() - started > 60:
            raise TimeoutError("the supervisor's processes did not all start within 60 s")
        time.sleep(0.2)
    connection.close()


def _enqueue_all(task, options: argparse.Namespace) -> None:
    from steady_queue.backend import enqueue_all

    enqueue_all([(task, (), {})] * options.jobs)
    _analyze(options)


def _analyze(options: argparse.Namespace) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for statement in ANALYZE[connection.vendor] if options.analyze else []:
            cursor.execute(statement)


def _phase(options: argparse.Namespace, counter, *, trickle=None) -> dict:
    """Count what happens over ``--seconds`` (after settling), enqueuing the trickle if any."""
    from django.db import connection

    connection.close()  # so that the statistics of what came before reach the server now
    time.sleep(SETTLE)
    server, sent, began = _server(), counter.snapshot(), time.monotonic()
    enqueued = 0
    while (now := time.monotonic()) < began + options.seconds:
        if trickle is None:
            time.sleep(began + options.seconds - now)
        elif now >= began + enqueued / options.trickle:
            trickle.enqueue()
            enqueued += 1
        else:
            time.sleep(began + enqueued / options.trickle - now)
    elapsed = time.monotonic() - began
    sent = counter.snapshot() - sent
    server = {name: value - server[name] for name, value in _server().items()}
    return {"seconds": elapsed, "sent": sent, "server": server, "figures": {}}


def _server() -> dict[str, float]:
    """The database's own counters (none for SQLite)."""
    from django.db import connection

    if connection.vendor not in SERVER:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(SERVER[connection.vendor])
        rows = cursor.fetchall()
    if connection.vendor == "postgresql":
        return dict(zip(COLUMNS["postgresql"], map(float, rows[0]), strict=True))
    status = {name: float(value) for name, value in rows}
    writes = sum(status.pop(f"Com_{verb}") for verb in ("insert", "update", "delete"))
    return status | {"writes": writes}


def _throttled(task) -> dict[str, float]:
    """The once-a-minute task: its jobs still throttled, its starts, the most in a minute."""
    from steady_queue.models import ThrottledExecution

    starts = _starts(task)
    return {
        "still throttled": ThrottledExecution.objects.filter(
            job__task_path=task.module_path
        ).count(),
        "starts": len(starts),
        "most in 60 s": _most_within(starts, timedelta(minutes=1)),
    }


def _released(task) -> dict[str, float]:
    """The fifty-a-second task: its start rate (past the first 50) and the most in a second."""
    starts = _starts(task)
    span = (starts[-1] - starts[0]).total_seconds() if len(starts) > 1 else 0.0
    return {
        "starts": len(starts),
        "starts/s": (len(starts) - 50) / span if span else 0.0,
        "most in 1 s": _most_within(starts, timedelta(seconds=1)),
    }


def _starts(task) -> list:
    from django.utils.dateparse import parse_datetime

    from steady_queue.models import Job

    attempts = Job.objects.filter(task_path=task.module_path).values_list("attempts", flat=True)
    return sorted(parse_datetime(a["started_at"]) for runs in attempts for a in runs)


def _most_within(starts: list, window: timedelta) -> int:
    """The most starts within any ``window`` (from one start to less than ``window`` later)."""
    most, first = 0, 0
    for last, start in enumerate(starts):
        while start - starts[first] >= window:
            first += 1
        most = max(most, last - first + 1)
    return most


def _kinds() -> dict[int, str]:
    from steady_queue.models import Process

    return dict(Process.objects.values_list("pid", "kind"))


def _rates(phase: dict, kinds: dict[int, str]) -> dict[str, float]:
    """Per second: statements by process kind and in all; the server's counters."""
    seconds, by_kind = phase["seconds"], Counter()
    for (pid, _), count in phase["sent"].items():
        by_kind[kinds.get(pid, "other")] += count
    rates = {"statements": sum(by_kind.values()) / seconds}
    rates |= {kind: by_kind[kind] / seconds for kind in ("Dispatcher", "Worker", "Supervisor")}
    rates |= {name: value / seconds for name, value in phase["server"].items()}
    rates |= phase["figures"]
    if starts := rates.get("starts/s"):
        rates["statements/job"] = rates["statements"] / starts
        rates |= {f"{n}/job": rates[n] / starts for n in phase["server"]}
    return rates


def _line(phases: int, figures: dict[str, dict[str, float]]) -> str:
    idle, throttled = figures["idle"]["statements"], figures["throttled"]["statements"]
    return (
        f"round of {phases} phases: statements/s idle {idle:.1f}, throttled {throttled:.1f}; "
        f"release {figures['release']['starts/s']:.1f} starts/s; load {os.getloadavg()[0]:.1f}"
    )


def _report(rounds: list[dict[str, dict[str, float]]]) -> None:
    """The median of every figure over the rounds, one block per phase; then the ratios."""
    medians = {
        phase: {name: statistics.median(run[phase][name] for run in rounds) for name in names}
        for phase, names in rounds[0].items()
    }
    for phase, names in rounds[0].items():
        print(f"\n{phase}")
        for name in names:
            every = ", ".join(f"{run[phase][name]:,.1f}" for run in rounds)
            print(f"  {name:<22} {medians[phase][name]:>10,.1f}   ({every})")
    print("\nratio of the medians  throttled / idle   throttled + trickle / trickle")
    for name in ["statements", *COLUMNS[_vendor()]]:
        quiet = _ratio(medians["throttled"][name], medians["idle"][name])
        busy = _ratio(medians["throttled + trickle"][name], medians["trickle"][name])
        print(f"  {name:<22} {quiet:>16} {busy:>30}")


def _ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}" if baseline else f"{value:.1f} / 0"


def _vendor() -> str:
    from django.db import connection

    return connection.vendor


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["postgres", "mysql", "sqlite"], default="postgres")
    parser.add_argument("--name", default="sq_bench_throttled")
    parser.add_argument("--jobs", type=int, default=10_000, help="throttled jobs per phase")
    parser.add_argument("--seconds", type=float, default=30, help="length of each phase")
    parser.add_argument("--trickle", type=float, default=10, help="unlimited jobs per second")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians)")
    parser.add_argument(
        "--no-analyze",
        dest="analyze",
        action="store_false",
        help="leave the tables without statistics (see ANALYZE)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
