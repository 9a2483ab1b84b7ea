"""The measurements: enqueue rates, statements per job, drain rates, pickup latency.

Steady Queue runs as the real ``manage.py steady_queue``, django-tasks-db as its real
``manage.py db_worker`` and dj-queue as its real ``manage.py dj_queue``, against the
same database, one after the other, in interleaved rounds (``Report.medians``).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.models import Max, Min
from django.test.utils import CaptureQueriesContext
from django.utils.dateparse import parse_datetime

from bench import database, processes, system
from bench.tasks import noop, noop_dtdb
from steady_queue.backend import enqueue_all
from steady_queue.models import ClaimedExecution, Job, Process, ReadyExecution
from steady_queue.runner.perform import perform


@dataclass
class Plan:
    """What to measure, and how much: ``full()`` for the figures of
    docs/reference/performance.md, ``smoke()`` for CI.
    """

    jobs: int
    dtdb_jobs: int
    repeat: int
    single_jobs: int
    bulk_batch: int
    finished: int
    latency_samples: int
    configs: list[str]
    dtdb_processes: list[int] = field(default_factory=lambda: [1, 2])
    dtdb_interval: float = 0.1
    # dj-queue's configurations (bench/processes.py DJ_QUEUE_CONFIGS); none where it is
    # not installed.
    dj_queue_configs: list[str] = field(default_factory=list)
    # Pickup latency of a worker left idle this long before each job (0: not measured).
    idle_gap: float = 1.0
    deadline: float = 900.0

    @classmethod
    def smoke(cls) -> Plan:
        return cls(
            jobs=200,
            dtdb_jobs=200,
            repeat=1,
            single_jobs=200,
            bulk_batch=200,
            finished=2_000,
            latency_samples=5,
            configs=["1x3", "2x5"],
            # Its default configuration only, so that the smoke stays short.
            dj_queue_configs=["default"] if settings.DJ_QUEUE else [],
            idle_gap=0.0,
            deadline=120.0,
        )

    @classmethod
    def full(cls, options) -> Plan:
        return cls(
            jobs=options.jobs,
            dtdb_jobs=min(options.jobs, options.dtdb_jobs),
            repeat=max(3, options.repeat),
            single_jobs=2_000,
            bulk_batch=options.bulk_batch,
            finished=options.finished,
            latency_samples=options.latency_samples,
            configs=options.configs.split(","),
            dj_queue_configs=["default", "throughput"] if settings.DJ_QUEUE else [],
        )


@dataclass
class Report:
    plan: Plan
    # measure, steady_queue, django-tasks-db, ratio, dj-queue, ratio (shorter rows: blanks)
    rows: list[tuple[str, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    machine: str = ""
    loads: list[float] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)

    def add(
        self,
        name: str,
        ours: float,
        theirs: float | None,
        unit: str,
        higher_is_better=True,
        djq: float | None = None,
    ):
        """A row: our figure, django-tasks-db's and dj-queue's, each with our ratio to it."""
        row = [name, f"{ours:,.1f} {unit}"]
        for other in (theirs, djq):
            row.append(f"{other:,.1f} {unit}" if other is not None else "")
            row.append(_ratio(ours, other, higher_is_better))
        self.rows.append(tuple(row))

    def median(self, name: str, measure: Callable[[], float]) -> float:
        """Run ``measure`` ``plan.repeat`` times; keep every run, return the median."""
        return self.medians({name: measure})[0]

    def medians(self, measures: dict[str, Callable[[], float]]) -> list[float]:
        """``median()`` of each measure, run in turns: drift of a shared machine hits all."""
        runs: dict[str, list[float]] = {name: [] for name in measures}
        for _ in range(self.plan.repeat):
            for name, measure in measures.items():
                runs[name].append(measure())
        for name, values in runs.items():
            self.runs.append(f"{name}: {', '.join(f'{run:,.1f}' for run in values)}")
        return [statistics.median(values) for values in runs.values()]

    def __str__(self) -> str:
        loads = ", ".join(f"{load:.2f}" for load in self.loads)
        columns = 6 if self.plan.dj_queue_configs else 4
        names = ["measure", "steady_queue", "django-tasks-db", "ratio", "dj-queue", "ratio"]
        head = (
            f"\nSteady Queue vs django-tasks-db and dj-queue on {self.machine}\n"
            f"medians of {self.plan.repeat} interleaved run(s); 1-minute load average during "
            f"the run: {loads}\n\n"
            f"| {' | '.join(names[:columns])} |\n|---|{'---:|' * (columns - 1)}\n"
        )
        rows = [(*row, *[""] * columns)[:columns] for row in self.rows]
        table = "\n".join(f"| {' | '.join(row)} |" for row in rows)
        runs = "\n\nEvery run:\n" + "\n".join(f"- {line}" for line in self.runs)
        return head + table + "".join(f"\n\n{note}" for note in self.notes) + runs


def run_all(plan: Plan) -> Report:
    report = Report(plan, machine=system.description())
    for step in (_enqueue_rates, _statements_per_job, _drain_rates, _pickup_latency):
        report.loads.append(system.load())
        step(plan, report)
    report.loads.append(system.load())
    return report


# Enqueue ---------------------------------------------------------------------------------


def _enqueue_rates(plan: Plan, report: Report) -> None:
    measures = {
        "single enqueue": lambda: _rate(plan.single_jobs, lambda: _single(noop, plan)),
        "django-tasks-db single enqueue": (
            lambda: _rate(plan.single_jobs, lambda: _single(noop_dtdb, plan))
        ),
    }
    if plan.dj_queue_configs:
        measures["dj-queue single enqueue"] = lambda: _rate(
            plan.single_jobs, lambda: _single(_noop_djq(), plan)
        )
    ours, theirs, *djq = report.medians(measures)
    report.add("single enqueue", ours, theirs, "jobs/s", djq=djq[0] if djq else None)
    name = f"bulk enqueue ({plan.jobs:,} jobs, enqueue_all of {plan.bulk_batch:,} at a time)"
    bulk = report.median(name, lambda: _rate(plan.jobs, lambda: _bulk(plan.jobs, plan.bulk_batch)))
    report.add(name, bulk, None, "jobs/s")


def _single(task, plan: Plan) -> None:
    for _ in range(plan.single_jobs):
        task.enqueue()


def _bulk(count: int, batch: int) -> None:
    for start in range(0, count, batch):
        enqueue_all([(noop, (), {})] * min(batch, count - start))


def _rate(count: int, work: Callable[[], None]) -> float:
    database.truncate()
    started = time.perf_counter()
    work()
    return count / (time.perf_counter() - started)


# Statements ------------------------------------------------------------------------------


def _statements_per_job(plan: Plan, report: Report) -> None:
    from steady_queue import storage

    ways = [(1, "a busy thread (run, record, claim the next)"), (5, "polls of 5")]
    portable, *fast = storage.implementations()
    for batch, how in ways:
        per_job = _count_statements(batch)
        report.rows.append((f"statements per job, {how}", f"{per_job:.2f}", "", ""))
    if fast:
        # "Before": the portable ORM storage every other database uses (and PostgreSQL
        # used before its one-statement enqueue, claim and finish).
        with storage.using(portable):
            for batch, how in ways:
                per_job = _count_statements(batch)
                name = f"statements per job, {how}, portable ORM storage (before)"
                report.rows.append((name, f"{per_job:.2f}", "", ""))


def _count_statements(batch: int) -> float:
    """Statements the worker path sends per job for 100 jobs, claiming ``batch`` at a time."""
    from steady_queue import storage
    from steady_queue.processes.worker import Worker

    database.truncate()
    worker = Worker(queues=["*"], threads=batch)
    worker.process = Process.register(kind=Process.Kind.WORKER, name="bench", pid=0)
    _bulk(100, 100)
    with CaptureQueriesContext(connection) as captured:
        if batch == 1:  # a busy worker thread: it claims its next job itself
            worker._run(storage.claim(["*"], 1, worker.process)[0])
        while claimed := storage.claim(["*"], batch, worker.process):
            for execution in claimed:  # a worker polling for idle threads
                perform(execution)
    if Job.objects.filter(finished_at__isnull=True).exists():
        raise RuntimeError("the statement count left jobs unfinished")
    return len(captured.captured_queries) / 100


# Drain -----------------------------------------------------------------------------------


def _drain_rates(plan: Plan, report: Report) -> None:
    """Every configuration of every backend, one drain each per round."""
    ours = {
        config: (
            f"drain {plan.jobs:,} no-op jobs, {config} (processes x threads)",
            lambda config=config: _drain_ours(plan, config),
        )
        for config in plan.configs
    }
    theirs = {
        count: (
            f"django-tasks-db: drain {plan.dtdb_jobs:,} no-op jobs, {count} db_worker(s)",
            lambda count=count: _drain_theirs(plan, count),
        )
        for count in plan.dtdb_processes
    }
    djq = {
        config: (
            f"dj-queue: drain {plan.jobs:,} no-op jobs, its {config} configuration",
            lambda config=config: _drain_djq(plan, config),
        )
        for config in plan.dj_queue_configs
    }
    measured = [*ours.values(), *theirs.values(), *djq.values()]
    medians = dict(zip([name for name, _ in measured], report.medians(dict(measured)), strict=True))
    for name, _ in measured:
        report.add(name, medians[name], None, "jobs/s")
    rates = {config: medians[name] for config, (name, _) in ours.items()}
    best = max(rates, key=rates.get)
    best_theirs = max(medians[name] for name, _ in theirs.values())
    best_djq = max((medians[name] for name, _ in djq.values()), default=None)
    report.add(
        "drain, best configuration of each", rates[best], best_theirs, "jobs/s", djq=best_djq
    )
    _drain_with_history(plan, report, best)


def _drain_ours(plan: Plan, config: str, history: bool = False) -> float:
    """Drain ``plan.jobs`` jobs; with ``history`` the finished jobs already there stay."""
    database.truncate(keep_jobs=history)
    baseline = Job.objects.aggregate(top=Max("pk"))["top"] or 0
    _bulk(plan.jobs, plan.bulk_batch)
    with processes.running(processes.steady_queue(config)):
        _wait(plan, lambda: not ReadyExecution.objects.exists())
        _wait(plan, lambda: not ClaimedExecution.objects.exists())
    rows = Job.objects.filter(pk__gt=baseline).values_list("attempts", "finished_at")
    starts, finishes = zip(*((_time(a[0]["started_at"]), f) for a, f in rows), strict=True)
    assert all(finishes), "every drained job must be finished"
    return plan.jobs / (max(finishes) - min(starts)).total_seconds()


def _drain_theirs(plan: Plan, process_count: int) -> float:
    from django_tasks_db.models import DBTaskResult

    database.truncate()
    for _ in range(plan.dtdb_jobs):
        noop_dtdb.enqueue()
    with processes.running(processes.dtdb(process_count, plan.dtdb_interval)):
        _wait(plan, lambda: not DBTaskResult.objects.filter(finished_at__isnull=True).exists())
    span = DBTaskResult.objects.aggregate(start=Min("started_at"), end=Max("finished_at"))
    return plan.dtdb_jobs / (span["end"] - span["start"]).total_seconds()


def _drain_djq(plan: Plan, config: str) -> float:
    from dj_queue.models import Job as DjQueueJob

    database.truncate()
    for start in range(0, plan.jobs, plan.bulk_batch):
        count = min(plan.bulk_batch, plan.jobs - start)
        _noop_djq().get_backend().enqueue_all([(_noop_djq(), (), {})] * count)
    with processes.dj_queue(config):
        _wait(plan, lambda: not DjQueueJob.objects.filter(finished_at__isnull=True).exists())
    # Each job returned the time it ran (dj-queue keeps no start time).
    starts = DjQueueJob.objects.values_list("return_value", flat=True)
    end = DjQueueJob.objects.aggregate(end=Max("finished_at"))["end"].timestamp()
    return plan.jobs / (end - min(starts))


def _drain_with_history(plan: Plan, report: Report, config: str) -> None:
    """The best configuration with a million finished jobs in the table, against itself
    on an empty table: paired runs, one after the other, so that both meet the same load.
    """
    name = f"drain {plan.jobs:,} with {plan.finished:,} finished jobs in the table ({config})"
    pairs = [_history_pair(plan, config) for _ in range(plan.repeat)]
    full, empty = (statistics.median(runs) for runs in zip(*pairs, strict=True))
    report.runs.append(f"{name}: " + ", ".join(f"{f:,.1f} (empty {e:,.1f})" for f, e in pairs))
    change = (full - empty) / empty * 100
    report.rows.append(
        (name, f"{full:,.1f} jobs/s", "", f"{change:+.0f}% vs empty table ({empty:,.1f})")
    )


def _history_pair(plan: Plan, config: str) -> tuple[float, float]:
    database.truncate()
    database.preload_finished(plan.finished)
    with_history = _drain_ours(plan, config, history=True)
    return with_history, _drain_ours(plan, config)


# Latency ---------------------------------------------------------------------------------


def _pickup_latency(plan: Plan, report: Report) -> None:
    """Each backend's pickup latency, in interleaved rounds: median of each round's p50/p90."""
    runs = {
        "steady_queue": lambda: _latencies_ours(plan, "1x3")[0],
        "django-tasks-db": lambda: _latencies_theirs(plan),
        **{
            f"dj-queue {config}": lambda config=config: _latencies_djq(plan, config)
            for config in plan.dj_queue_configs
        },
    }
    if plan.idle_gap:
        # A worker idle for a while before each job: nothing left of the last one's
        # activity (Steady Queue polls more often just after activity where nothing
        # wakes it, see processes/pacing.py).
        samples = max(3, plan.latency_samples // 2)
        runs["steady_queue idle"] = lambda: _latencies_ours(
            plan, "1x3", gap=plan.idle_gap, count=samples
        )[0]
        if plan.dj_queue_configs:
            runs["dj-queue default idle"] = lambda: _latencies_djq(
                plan, "default", gap=plan.idle_gap, count=samples
            )
    figures = _latency_rounds(plan, report, runs)
    djq = "dj-queue default" if plan.dj_queue_configs else None
    for percentile in (50, 90):
        name = "median" if percentile == 50 else f"p{percentile}"
        report.add(
            f"pickup latency, idle worker, {name}",
            figures["steady_queue"][percentile],
            figures["django-tasks-db"][percentile],
            "ms",
            False,
            djq=figures[djq][percentile] if djq else None,
        )
    if "dj-queue throughput" in figures:
        report.add(
            "pickup latency, dj-queue's throughput configuration, median",
            figures["steady_queue"][50],
            None,
            "ms",
            False,
            djq=figures["dj-queue throughput"][50],
        )
    if plan.idle_gap:
        report.add(
            f"pickup latency, worker idle {plan.idle_gap:g} s before each job, median",
            figures["steady_queue idle"][50],
            None,
            "ms",
            False,
            djq=figures["dj-queue default idle"][50] if djq else None,
        )
    if connection.vendor == "postgresql":  # elsewhere nothing wakes workers: they poll
        _wake_up_cost(plan, report)


def _latency_rounds(
    plan: Plan, report: Report, runs: dict[str, Callable[[], list[float]]]
) -> dict[str, dict[int, float]]:
    """Run each of ``runs`` once per round, in turns; the median of its rounds' percentiles."""
    rounds: dict[str, list[list[float]]] = {name: [] for name in runs}
    for _ in range(plan.repeat):
        for name, run in runs.items():
            rounds[name].append(run())
    figures = {}
    for name, samples in rounds.items():
        figures[name] = {p: statistics.median(_ms(s, p) for s in samples) for p in (50, 90)}
        medians = ", ".join(f"{_ms(s, 50):,.1f}" for s in samples)
        report.runs.append(f"pickup latency {name}, median of each round (ms): {medians}")
    return figures


def _wake_up_cost(plan: Plan, report: Report) -> None:
    # Polling every 10 s, so that what the CPU time measures is waking up and running.
    _, one = _latencies_ours(plan, "1x3p10")
    many, two = _latencies_ours(plan, "2x5p10")
    report.add("pickup latency, two idle worker processes, median", _ms(many, 50), None, "ms")
    report.notes.append(
        "Wake-up cost: a notification wakes every idle worker process whose queues match. "
        "CPU time of the worker processes and their database server processes per job "
        f"enqueued while idle: {one * 1000:.2f} ms with one worker process, "
        f"{two * 1000:.2f} ms with two (polling every 10 s)."
    )


def _latencies_ours(
    plan: Plan, config: str, gap: float = 0.0, count: int | None = None
) -> tuple[list[float], float]:
    """Pickup latencies of jobs enqueued one at a time, and the CPU seconds per job.

    Each job is enqueued 0.05 to 0.15 s after the previous one ended, plus ``gap``.
    """
    database.truncate()
    samples, count = [], count or plan.latency_samples
    workers, threads = map(int, config.split("p")[0].split("x"))
    with processes.running(processes.steady_queue(config)):
        _wait(plan, lambda: Process.objects.filter(kind="Worker").count() == workers)
        # Give every thread a job first, so that every connection is open, then let the
        # workers settle into their idle wait.
        _bulk(workers * threads * 2, workers * threads * 2)
        _wait(plan, lambda: not Job.objects.filter(finished_at__isnull=True).exists())
        time.sleep(1.0)
        pids = [*Process.objects.values_list("pid", flat=True), *system.server_pids()]
        cpu = system.cpu_seconds(pids)
        for _ in range(count):
            job_id = int(noop.enqueue().id)
            done = Job.objects.filter(pk=job_id, finished_at__isnull=False)
            _wait(plan, done.exists, every=0.002)
            job = Job.objects.get(pk=job_id)
            samples.append((_time(job.attempts[0]["started_at"]) - job.created_at).total_seconds())
            time.sleep(gap + random.uniform(0.05, 0.15))
        cpu = system.cpu_seconds(pids) - cpu
    return samples, cpu / count


def _latencies_theirs(plan: Plan) -> list[float]:
    from django_tasks_db.models import DBTaskResult

    database.truncate()
    samples = []
    with processes.running(processes.dtdb(1, plan.dtdb_interval)):
        time.sleep(3.0)  # db_worker registers nothing: give it time to start polling
        for _ in range(plan.latency_samples):
            result_id = noop_dtdb.enqueue().id
            done = DBTaskResult.objects.filter(pk=result_id, finished_at__isnull=False)
            _wait(plan, done.exists, every=0.002)
            row = DBTaskResult.objects.get(pk=result_id)
            samples.append((row.started_at - row.enqueued_at).total_seconds())
            time.sleep(random.uniform(0.05, 0.15))
    return samples


def _latencies_djq(
    plan: Plan, config: str, gap: float = 0.0, count: int | None = None
) -> list[float]:
    """dj-queue's pickup latencies, as ``_latencies_ours`` measures ours."""
    from dj_queue.models import Job as DjQueueJob
    from dj_queue.models import Process as DjQueueProcess

    database.truncate()
    latencies, count = [], count or plan.latency_samples
    task = _noop_djq()
    with processes.dj_queue(config) as procs:
        workers = DjQueueProcess.objects.filter(kind="Worker")
        _wait(plan, lambda: workers.exists() and all(proc.poll() is None for proc in procs))
        task.get_backend().enqueue_all([(task, (), {})] * 20)  # every thread's connection
        _wait(plan, lambda: not DjQueueJob.objects.filter(finished_at__isnull=True).exists())
        time.sleep(1.0)
        for _ in range(count):
            job_id = task.enqueue().id
            done = DjQueueJob.objects.filter(pk=job_id, finished_at__isnull=False)
            _wait(plan, done.exists, every=0.002)
            job = DjQueueJob.objects.get(pk=job_id)
            latencies.append(job.return_value - job.created_at.timestamp())
            time.sleep(gap + random.uniform(0.05, 0.15))
    return latencies


def _noop_djq():
    from bench.tasks import noop_djq

    return noop_djq


# Helpers ---------------------------------------------------------------------------------


def _wait(plan: Plan, condition: Callable[[], bool], every: float = 0.05) -> None:
    deadline = time.monotonic() + plan.deadline
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark condition not met within {plan.deadline:.0f} s")
        time.sleep(every)


def _ratio(ours: float, other: float | None, higher_is_better: bool) -> str:
    if not other:
        return ""
    factor = ours / other if higher_is_better else other / ours
    # Two decimals near 1, where "no slower than" is decided.
    ratio = f"{factor:.2f}x" if factor < 2 else f"{factor:.1f}x"
    return ratio + ("" if higher_is_better else " lower")


def _ms(samples: list[float], percentile: int) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, round(percentile / 100 * (len(ordered) - 1)))
    return ordered[index] * 1000


def _time(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else parse_datetime(value)
