"""Steady Queue against Celery + Redis and RQ (and dj-queue, django-tasks-db), one run.

    python bench/compare_brokers.py --db postgres                  # the table
    python bench/compare_brokers.py --db postgres --restart-redis  # and lose jobs to Redis
    python bench/compare_brokers.py --db postgres --only durability --restart-redis \\
        --restart-postgres                                       # the durability demo only

Redis is a server of the benchmark's own (``redis-server`` on --redis-port, default
6399, in a temporary directory, with Redis's default configuration), so that flushing
and restarting it disturbs nobody; without ``redis-server`` on PATH the script stops
and says so. Every job of Steady Queue, Celery and RQ appends a line to a file when it
runs (bench/sink.py): counts, drain spans and pickup latencies are read there, the same
way for all three. dj-queue and django-tasks-db are measured as bench/run.py does.
Figures are medians of --rounds interleaved rounds (the backends take turns).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import pacer, sink  # noqa: E402

SHORT = 0.005  # the "5 ms job"


@dataclass
class Worker:
    """A way to run one backend's workers: its command line and environment."""

    backend: str  # steady_queue, celery, rq
    label: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def steady_queue_worker(config: str, listen: bool = True) -> Worker:
    argv = [sys.executable, str(ROOT / "bench" / "manage.py"), "steady_queue", "--skip-recurring"]
    argv += ["--config", f"bench.configs.W{config}"]
    env = {} if listen else {"SQ_BENCH_NO_LISTEN": "1"}
    label = f"Steady Queue {config}" + ("" if listen else ", no NOTIFY")
    return Worker("steady_queue", label, argv, env)


def celery_worker(pool: str, concurrency: int, acks_late: bool) -> Worker:
    argv = [sys.executable, "-m", "celery", "-A", "bench.celery_app", "worker"]
    argv += ["--pool", pool, "--concurrency", str(concurrency), "--loglevel", "WARNING"]
    argv += ["--without-mingle", "--without-gossip"]
    label = f"Celery {pool} x{concurrency}, acks_late {'on' if acks_late else 'off'}"
    return Worker("celery", label, argv, {"SQ_BENCH_CELERY_ACKS_LATE": "1" if acks_late else ""})


def rq_workers(count: int, simple: bool) -> Worker:
    """``count`` RQ worker processes; ``simple``: SimpleWorker (runs jobs in itself),
    else RQ's default Worker (forks a work horse per job)."""
    worker_class = "rq.worker.SimpleWorker" if simple else "rq.worker.Worker"
    argv = [sys.executable, "-m", "rq.cli", "worker", "bench", "--worker-class", worker_class]
    argv += ["--url", os.environ["SQ_BENCH_REDIS_URL"]]
    argv += ["--logging_level", "WARNING", "--disable-job-desc-logging"]
    label = f"RQ {'SimpleWorker' if simple else 'Worker (fork per job)'} x{count}"
    return Worker("rq", label, argv, {"SQ_BENCH_RQ_PROCESSES": str(count)})


# Servers and processes --------------------------------------------------------------------


@contextmanager
def redis_server(port: int) -> Iterator[Callable[[], None]]:
    """A redis-server of our own, Redis's defaults; yields ``restart()`` (SIGKILL, start)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on PATH: the Celery and RQ comparison needs it")
    directory = tempfile.mkdtemp(prefix="sq-bench-redis-")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory]
    state = {}

    def start() -> None:
        state["proc"] = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        _until(lambda: _redis().ping(), 10, "redis-server did not start")

    def restart() -> None:
        state["proc"].send_signal(signal.SIGKILL)
        state["proc"].wait()
        start()

    start()
    try:
        yield restart
    finally:
        state["proc"].terminate()
        state["proc"].wait()
        shutil.rmtree(directory, ignore_errors=True)


def _redis():
    from redis import Redis

    return Redis.from_url(os.environ["SQ_BENCH_REDIS_URL"], socket_connect_timeout=1)


@contextmanager
def running(worker: Worker, sink_path: str) -> Iterator[list[subprocess.Popen]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), sink.VARIABLE: sink_path, **worker.env}
    env["DJANGO_SETTINGS_MODULE"] = "bench.broker_settings"
    copies = int(worker.env.get("SQ_BENCH_RQ_PROCESSES", "1"))
    log = open(sink_path + ".log", "ab")  # noqa: SIM115 - closed below
    procs = [
        subprocess.Popen(worker.argv, env=env, cwd=ROOT, stdout=log, stderr=log)
        for _ in range(copies)
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                _kill_tree(proc.pid)
                proc.wait()
        log.close()


def _kill_tree(pid: int) -> None:
    import psutil

    try:
        parent = psutil.Process(pid)
        for child in [*parent.children(recursive=True), parent]:
            child.kill()
    except psutil.NoSuchProcess:
        pass


def rss(procs: list[subprocess.Popen]) -> list[float]:
    """Resident memory (MB) of every process of the workers' trees."""
    import psutil

    sizes = []
    for proc in procs:
        try:
            root = psutil.Process(proc.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess):  # ended meanwhile
                sizes.append(process.memory_info().rss / 2**20)
    return sizes


def _until(condition: Callable[[], object], seconds: float, message: str) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if condition():
                return
        except Exception:  # a server still starting: ask again
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(message)
        time.sleep(0.01)


def _wait_lines(path: str, count: int, procs: list[subprocess.Popen], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while sink.count(path) < count:
        if any(proc.poll() is not None for proc in procs):
            raise RuntimeError(f"a worker exited; its log: {path}.log")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{sink.count(path)} of {count} jobs ran in {seconds:.0f} s")
        time.sleep(0.01)


# Enqueue ---------------------------------------------------------------------------------


def clear() -> None:
    """Empty Redis and every queue table: each run starts from nothing."""
    from bench import database

    _redis().flushall()
    database.truncate()


def enqueue(
    backend: str, count: int, bulk: bool, seconds: float | None = None, numbered: bool = False
) -> None:
    """``count`` no-op jobs (or jobs of ``seconds``), one call each or in bulk;
    ``numbered``: each job is given its number, which it writes to the sink."""
    base: tuple = () if seconds is None else (seconds,)
    calls = [(*base, i) if numbered else base for i in range(count)]
    if backend == "steady_queue":
        from bench import broker_tasks
        from steady_queue.backend import enqueue_all

        task = broker_tasks.tick if seconds is None else broker_tasks.sleep_tick
        if bulk:
            for start in range(0, count, 10_000):
                enqueue_all([(task, args, {}) for args in calls[start : start + 10_000]])
        else:
            for args in calls:
                task.enqueue(*args)
    elif backend == "celery":
        from bench import celery_app

        task = celery_app.tick if seconds is None else celery_app.sleep_tick
        if bulk:  # kombu 5.7's Producer.batch(): the LPUSHes go in pipelines of 1,000
            with celery_app.app.producer_or_acquire() as producer, producer.batch():
                for args in calls:
                    task.apply_async(args, producer=producer)
        else:
            for args in calls:
                task.apply_async(args)
    elif backend == "rq":
        from rq import Queue

        from bench import rq_jobs

        job = rq_jobs.tick if seconds is None else rq_jobs.sleep_tick
        queue = Queue("bench", connection=_redis())
        if bulk:
            for start in range(0, count, 1_000):
                with queue.connection.pipeline() as pipe:
                    datas = [Queue.prepare_data(job, a) for a in calls[start : start + 1_000]]
                    queue.enqueue_many(datas, pipeline=pipe)
                    pipe.execute()
        else:
            for args in calls:
                queue.enqueue(job, *args)
    elif backend == "django-tasks-db":
        from bench.tasks import noop_dtdb

        for _ in range(count):
            noop_dtdb.enqueue()
    elif backend == "dj-queue":
        from bench.tasks import noop_djq

        if bulk:
            noop_djq.get_backend().enqueue_all([(noop_djq, (), {})] * count)
        else:
            for _ in range(count):
                noop_djq.enqueue()


def enqueue_rate(backend: str, count: int, bulk: bool) -> float:
    clear()
    started = time.perf_counter()
    enqueue(backend, count, bulk)
    return count / (time.perf_counter() - started)


# Drain, memory, latency -------------------------------------------------------------------


@dataclass
class Drain:
    rate: float
    idle: list[float]
    busy: list[float]


def drain(worker: Worker, count: int, seconds: float | None, scratch: Path) -> Drain:
    """Enqueue ``count`` jobs, start ``worker`` and time the drain from its sink; RSS of
    its processes at their largest during the drain (busy) and 1 s after it (idle)."""
    clear()
    path = str(scratch / f"drain-{time.monotonic_ns()}")
    enqueue(worker.backend, count, bulk=True, seconds=seconds)
    busy: list[float] = []
    with running(worker, path) as procs:
        last, moved = -1, time.monotonic()
        while (done := sink.count(path)) < count:
            if done != last:
                last, moved = done, time.monotonic()
            if any(proc.poll() is not None for proc in procs) or time.monotonic() - moved > 60:
                raise RuntimeError(f"{worker.label}: the drain stopped; log: {path}.log")
            if sum(sizes := rss(procs)) > sum(busy):
                busy = sizes
            time.sleep(0.1)
        time.sleep(1.0)
        idle = rss(procs)
    times = [float(line[-1]) for line in sink.lines(path)]
    return Drain(count / (max(times) - min(times)), idle, busy)


def steady_latency(
    worker: Worker, rate: float, count: int, scratch: Path
) -> tuple[list[float], list[float]]:
    """Latencies (s) from the due time and from the enqueue call to the job's start, of
    ``count`` jobs enqueued at ``rate`` per second by
    bench/pacer.py while ``worker`` runs: one producer process per 100 jobs/s (one
    process enqueueing one job at a time does not keep up with more on a loaded
    2-core machine), their due times interleaved on one schedule."""
    clear()
    path = str(scratch / f"latency-{time.monotonic_ns()}")
    producers = max(1, math.ceil(rate / 100))
    with running(worker, path) as procs:
        enqueue(worker.backend, 20, bulk=False)  # warm up: every process has run a job
        _wait_lines(path, 20, procs, 120)
        time.sleep(1.0)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "bench.broker_settings",
        }
        start = time.time() + 3.0 + 0.3 * producers  # every producer imported and connected
        command = [sys.executable, "-m", "bench.pacer", worker.backend, f"--rate={rate}"]
        command += [f"--count={count}", f"--start={start}", f"--producers={producers}"]
        pacers = [
            subprocess.Popen(
                [*command, f"--producer={i}"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL
            )
            for i in range(producers)
        ]
        if any(p.wait() != 0 for p in pacers):
            raise RuntimeError("a pacer failed")
        _wait_lines(path, 20 + producers + count, procs, 120)
    lines = [line for line in sink.lines(path) if line[0] == "stamp" and float(line[1])]
    due, sent, started = zip(*((float(f) for f in line[1:4]) for line in lines), strict=True)
    return (
        [s - d for s, d in zip(started, due, strict=True)],
        [s - e for s, e in zip(started, sent, strict=True)],
    )


def other_drain(backend: str, count: int) -> float:
    """dj-queue's (throughput configuration) and django-tasks-db's (2 db_workers) drains,
    as bench/run.py measures them."""
    from bench import measures

    plan = measures.Plan(
        jobs=count,
        dtdb_jobs=count,
        repeat=1,
        single_jobs=0,
        bulk_batch=count,
        finished=0,
        latency_samples=0,
        configs=[],
    )
    if backend == "dj-queue":
        return measures._drain_djq(plan, "throughput")
    return measures._drain_theirs(plan, 2)


# Durability -------------------------------------------------------------------------------


def durability(worker: Worker, count: int, restart: Callable[[], None], scratch: Path) -> str:
    """Restart the broker (or the database) while ``worker`` drains ``count`` numbered
    5 ms jobs; count from the sink the jobs that never ran, and those that ran twice."""
    clear()
    path = str(scratch / f"durability-{time.monotonic_ns()}")
    enqueue(worker.backend, count, bulk=True, seconds=SHORT, numbered=True)
    with running(worker, path) as procs:
        _wait_lines(path, count // 5, procs, 300)
        at = sink.count(path)
        restart()
        # Done when every job ran, or when nothing more ran for 20 s (the rest is gone).
        last, quiet_since = -1, time.monotonic()
        while (now := sink.count(path)) < count and time.monotonic() - quiet_since < 20:
            if now != last:
                last, quiet_since = now, time.monotonic()
            time.sleep(0.1)
    runs = [int(line[1]) for line in sink.lines(path)]
    ran, twice = set(runs), len(runs) - len(set(runs))
    failed = _failed_steady_queue_jobs() if worker.backend == "steady_queue" else set()
    lost = count - len(ran | failed)
    recorded = f", {len(failed - ran)} more failed and kept for a retry" if failed - ran else ""
    return (
        f"| {worker.label} | {count:,} | {at:,} | {len(ran):,}{recorded} | {twice:,} | "
        f"**{lost:,}** |"
    )


def _failed_steady_queue_jobs() -> set[int]:
    """The numbers of the jobs whose run the restart cut: failed (kept, retryable), not
    lost; a retry runs them (Job.retry, the dashboard's Retry)."""
    from steady_queue import arguments
    from steady_queue.models import Job

    stored = Job.objects.filter(failed_execution__isnull=False).values_list("arguments", flat=True)
    return {int(arguments.deserialize(value)[0][-1]) for value in stored}


def restart_postgres() -> None:
    """The benchmark's private server under tests/faults/private_postgres.py, else the
    cluster of ``pg_lsclusters``' first line (disturbs everyone using it: opt-in)."""
    if os.environ.get("SQ_FAULTS_PG_DATA"):
        from tests.faults import private_postgres

        private_postgres.restart()
    else:
        version, name = subprocess.run(
            ["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=True
        ).stdout.split()[:2]
        subprocess.run(["pg_ctlcluster", version, name, "restart", "-m", "fast"], check=True)
    from django.db import connections

    connections.close_all()  # ours was cut too


# Memory over many jobs ---------------------------------------------------------------------


def memory_growth(worker: Worker, batches: int, size: int, scratch: Path) -> list[float]:
    """RSS (MB, all the workers' processes) idle after a warm-up of 100 jobs, then after
    each of ``batches`` drains of ``size`` no-op jobs (enqueued while the workers run)."""
    clear()
    path = str(scratch / f"memory-{time.monotonic_ns()}")
    with running(worker, path) as procs:
        enqueue(worker.backend, 100, bulk=True)
        _wait_lines(path, 100, procs, 120)
        time.sleep(2.0)
        sizes = [sum(rss(procs))]
        for batch in range(1, batches + 1):
            for start in range(0, size, 10_000):
                enqueue(worker.backend, min(10_000, size - start), bulk=True)
            _wait_lines(path, 100 + batch * size, procs, 3600)
            time.sleep(2.0)
            sizes.append(sum(rss(procs)))
    return sizes


def memory_table(options: argparse.Namespace, cores: int, scratch: Path) -> str:
    size = options.memory_jobs
    lines = [
        f"\nWorker memory over {options.memory_batches} x {size:,} no-op jobs: RSS of all "
        "the workers' processes, MB, 2 s after each drain\n",
        "| workers | idle, warmed up | "
        + " | ".join(f"after {size * (b + 1):,}" for b in range(options.memory_batches))
        + f" | growth per {size:,} after the first |",
        f"|---|{'---:|' * (options.memory_batches + 2)}",
    ]
    for worker in (
        steady_queue_worker(options.config),
        celery_worker("prefork", cores, acks_late=False),
    ):
        sizes = memory_growth(worker, options.memory_batches, size, scratch)
        growth = (sizes[-1] - sizes[1]) / max(1, len(sizes) - 2)
        cells = " | ".join(f"{mb:.1f}" for mb in sizes)
        lines.append(f"| {worker.label} | {cells} | {growth:+.1f} |")
    return "\n".join(lines)


# The run ----------------------------------------------------------------------------------


BACKENDS = ["Steady Queue", "Celery + Redis", "RQ", "dj-queue", "django-tasks-db"]


class Table:
    """Rows of figures per backend, each figure kept per round; medians at the end."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str], list[float]] = {}
        self.order: list[str] = []
        self.labels: dict[tuple[str, str], str] = {}

    def add(self, row: str, backend: str, value: float, label: str = "") -> None:
        if row not in self.order:
            self.order.append(row)
        self.cells.setdefault((row, backend), []).append(value)
        if label:
            self.labels[row, backend] = label

    def median(self, row: str, backend: str) -> float | None:
        values = self.cells.get((row, backend))
        return statistics.median(values) if values else None

    def best(self, row: str, backends: list[str]) -> tuple[str, float] | None:
        found = [(b, m) for b in backends if (m := self.median(row, b)) is not None]
        return max(found, key=lambda item: item[1]) if found else None

    def runs(self) -> str:
        return "\n".join(
            f"- {row}, {backend}: {', '.join(f'{v:,.1f}' for v in values)}"
            for (row, backend), values in self.cells.items()
        )


def main() -> int:
    options = _parse_args()
    os.environ.update(SQ_BENCH_DB=options.db, SQ_BENCH_NAME=options.name)
    os.environ["SQ_BENCH_REDIS_URL"] = f"redis://127.0.0.1:{options.redis_port}/0"
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.broker_settings"
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    from bench import system

    scratch = Path(tempfile.mkdtemp(prefix="sq-bench-brokers-"))
    cores = os.cpu_count() or 1
    print(f"{system.description()}; Redis {_redis_version()}", flush=True)
    with redis_server(options.redis_port) as restart_redis:
        if options.only in (None, "table"):
            print(comparison(options, cores, scratch), flush=True)
        if options.only in (None, "latency"):
            print(latency_table(options, cores, scratch), flush=True)
        if options.only == "memory":
            print(memory_table(options, cores, scratch), flush=True)
        if options.restart_redis or options.restart_postgres:
            print(durability_table(options, cores, restart_redis, scratch), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def comparison(options: argparse.Namespace, cores: int, scratch: Path) -> str:
    from django.conf import settings

    others = ["dj-queue"] if settings.DJ_QUEUE else []
    others.append("django-tasks-db")
    sq = steady_queue_worker(options.config)
    drainers = {  # name: (backend column, worker)
        sq.label: ("Steady Queue", sq),
        **{
            w.label: ("Celery + Redis", w)
            for w in (
                celery_worker("prefork", cores, acks_late=False),
                celery_worker("prefork", cores, acks_late=True),
                celery_worker("threads", options.threads, acks_late=False),
            )
        },
        **{w.label: ("RQ", w) for w in (rq_workers(cores, True), rq_workers(cores, False))},
    }
    short = {n: d for n, d in drainers.items() if "fork per job" not in n}
    table, detail, memory = Table(), Table(), {}
    columns = {"Steady Queue": "steady_queue", "Celery + Redis": "celery", "RQ": "rq"}
    columns.update({name: name for name in others})
    for round_ in range(options.rounds):
        print(f"round {round_ + 1}", flush=True)
        turn = list(columns.items())
        if round_ % 2:
            turn.reverse()  # alternate who goes first
        for column, backend in turn:
            single = enqueue_rate(backend, options.single_jobs, bulk=False)
            table.add("single enqueue, jobs/s", column, single)
            if backend != "django-tasks-db":
                bulk = enqueue_rate(backend, options.jobs, bulk=True)
                table.add(f"bulk enqueue of {options.jobs:,}, jobs/s", column, bulk)
        for name, (_, worker) in drainers.items():
            slow = "fork per job" in name  # about 40 jobs/s: as few jobs as dtdb's
            result = drain(worker, options.dtdb_jobs if slow else options.jobs, None, scratch)
            detail.add(f"drain {options.jobs:,} no-op jobs, jobs/s", name, result.rate)
            memory[name] = result
        for name, (_, worker) in short.items():
            result = drain(worker, options.jobs, SHORT, scratch)
            detail.add(f"drain {options.jobs:,} 5 ms jobs, jobs/s", name, result.rate)
        for column in others:
            count = options.jobs if column == "dj-queue" else options.dtdb_jobs
            detail.add(
                f"drain {options.jobs:,} no-op jobs, jobs/s", column, other_drain(column, count)
            )
        for column, worker in (
            ("Steady Queue", sq),
            ("Celery + Redis", celery_worker("prefork", cores, acks_late=False)),
            ("RQ", rq_workers(cores, True)),
        ):
            from_due, samples = steady_latency(
                worker, options.rate, int(options.rate * options.seconds), scratch
            )
            for p in (50, 95, 99, 100):
                name = "max" if p == 100 else f"p{p}"
                table.add(
                    f"pickup latency at {options.rate:g} jobs/s, {name}, ms",
                    column,
                    pacer.percentile(samples, p) * 1000,
                    worker.label,
                )
            table.add(
                "the same from the due time, p99, ms (the producers' lag too)",
                column,
                pacer.percentile(from_due, 99) * 1000,
            )
        if round_ + 1 < options.rounds:  # the figures so far, should the run be cut short
            print(_with_best(table, detail, drainers, options, memory, cores), file=sys.stderr)
    return _with_best(table, detail, drainers, options, memory, cores)


def _with_best(table: Table, detail: Table, drainers: dict, options, memory, cores) -> str:
    """The table with each backend's best drain configuration added, rendered."""
    table = copy.deepcopy(table)
    for row in list(detail.order):
        for column in BACKENDS:
            names = [n for n, (c, _) in drainers.items() if c == column] or [column]
            if best := detail.best(row, names):
                table.add(row + " (best configuration)", column, best[1], best[0])
    return _render(options, table, detail, memory, cores)


def _render(options, table: Table, detail: Table, memory: dict[str, Drain], cores: int) -> str:
    present = [b for b in BACKENDS if any((r, b) in table.cells for r in table.order)]
    lines = [
        f"\n{options.db}, {cores} cores, medians of {options.rounds} interleaved round(s)\n",
        f"| measure | {' | '.join(present)} |",
        f"|---|{'---:|' * len(present)}",
    ]
    for row in table.order:
        cells = [table.median(row, b) for b in present]
        lines.append(f"| {row} | {' | '.join(_cell(c) for c in cells)} |")
    lines += [
        "",
        "Best configurations: "
        + "; ".join(
            f"{b}: {n}"
            for (r, b), n in table.labels.items()
            if "best" in r and b in present and "no-op" in r
        ),
        "",
    ]
    lines += [
        "| configuration | " + " | ".join(detail.order) + " |",
        f"|---|{'---:|' * len(detail.order)}",
    ]
    names = list(dict.fromkeys(name for _, name in detail.cells))
    for name in names:
        cells = [detail.median(row, name) for row in detail.order]
        lines.append(f"| {name} | {' | '.join(_cell(c) for c in cells)} |")
    lines += [
        "",
        "Worker memory, RSS in MB: the largest process (all processes), last no-op drain:",
        "",
        "| configuration | processes | idle, 1 s after the drain | busy, at the drain's peak |",
        "|---|---:|---:|---:|",
    ]
    for name, result in memory.items():
        lines.append(f"| {name} | {len(result.idle)} | {_mb(result.idle)} | {_mb(result.busy)} |")
    return "\n".join(lines) + "\n\nEvery run:\n" + table.runs() + "\n" + detail.runs()


def latency_table(options: argparse.Namespace, cores: int, scratch: Path) -> str:
    """Steady Queue at steady rates, with and without NOTIFY on PostgreSQL; Celery's
    and RQ's best drains beside it."""
    from django.db import connection

    workers = [steady_queue_worker(options.config)]
    if connection.vendor == "postgresql":
        workers.append(steady_queue_worker(options.config, listen=False))
    workers += [celery_worker("prefork", cores, acks_late=False), rq_workers(cores, True)]
    rates = [float(rate) for rate in options.rates.split(",")]
    rounds: dict[tuple[str, float], list[tuple[list[float], list[float]]]] = {}
    for _ in range(options.rounds):
        for rate in rates:
            for worker in workers:
                count = int(rate * options.seconds)
                samples = steady_latency(worker, rate, count, scratch)
                rounds.setdefault((worker.label, rate), []).append(samples)
                print(f"{worker.label} at {rate:g}/s done", file=sys.stderr, flush=True)
    lines = [
        f"\nOpen-loop pickup latency, ms ({options.seconds:g} s at each rate, one producer "
        f"process per 100 jobs/s; median of {options.rounds} round(s) of each percentile): "
        "from the enqueue call to the job's start, and p99 and max from the job's due time "
        "(what the producers' own lag adds)\n",
        "| workers | rate, jobs/s | p50 | p95 | p99 | max | from due: p99 | max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (label, rate), runs in rounds.items():
        cells = [
            statistics.median(pacer.percentile(sent, p) * 1000 for _, sent in runs)
            for p in (50, 95, 99, 100)
        ]
        cells += [
            statistics.median(pacer.percentile(due, p) * 1000 for due, _ in runs) for p in (99, 100)
        ]
        lines.append(f"| {label} | {rate:g} | {' | '.join(f'{c:,.1f}' for c in cells)} |")
    return "\n".join(lines)


def durability_table(options, cores: int, restart_redis, scratch: Path) -> str:
    lines = [
        f"\nA restart during a drain of {options.durability_jobs:,} 5 ms jobs "
        "(counted by a file each job appends its number to)\n",
        "| workers | enqueued | had run at the restart | ran | ran twice | lost |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    count = options.durability_jobs
    if options.restart_redis:
        for worker in (
            celery_worker("prefork", cores, acks_late=False),
            celery_worker("prefork", cores, acks_late=True),
            rq_workers(cores, True),
        ):
            lines.append(durability(worker, count, restart_redis, scratch))
    if options.restart_postgres:
        lines.append(
            durability(steady_queue_worker(options.config), count, restart_postgres, scratch)
        )
    return "\n".join(lines)


def _mb(sizes: list[float]) -> str:
    return f"{max(sizes, default=0):.0f} ({sum(sizes):.0f})"


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value < 10 else f"{value:,.0f}"


def _redis_version() -> str:
    done = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
    return done.stdout.split()[2].removeprefix("v=") if done.returncode == 0 else "absent"


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--name", default="sq_brokers")
    parser.add_argument("--redis-port", type=int, default=6399)
    parser.add_argument("--only", choices=["table", "latency", "durability", "memory"])
    parser.add_argument("--memory-jobs", type=int, default=100_000, help="--only memory")
    parser.add_argument("--memory-batches", type=int, default=3, help="--only memory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs per drain and bulk enqueue")
    parser.add_argument("--single-jobs", type=int, default=2_000)
    parser.add_argument("--dtdb-jobs", type=int, default=2_000)
    parser.add_argument("--config", default="2x5", help="Steady Queue's processes x threads")
    parser.add_argument("--threads", type=int, default=10, help="Celery's threads pool size")
    parser.add_argument("--rate", type=float, default=200, help="the table's steady rate")
    parser.add_argument("--rates", default="100,500,1000", help="the latency table's rates")
    parser.add_argument("--seconds", type=float, default=10, help="seconds at each rate")
    parser.add_argument("--durability-jobs", type=int, default=5_000)
    parser.add_argument(
        "--restart-redis",
        action="store_true",
        help="SIGKILL and restart Redis during Celery's and RQ's drains",
    )
    parser.add_argument(
        "--restart-postgres",
        action="store_true",
        help="restart PostgreSQL during Steady Queue's drain (the private server of "
        "`python -m tests.faults.private_postgres ...` if run under it, else the "
        "cluster of pg_lsclusters: everyone's)",
    )
    options = parser.parse_args()
    if options.only == "durability" and not (options.restart_redis or options.restart_postgres):
        parser.error("--only durability needs --restart-redis and/or --restart-postgres")
    return options


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"\nbenchmark finished in {time.monotonic() - started:.0f} s")
    sys.exit(code)
