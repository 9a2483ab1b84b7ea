"""The metric families of one scrape, read from the queue database in a fixed number of queries.

Ready and failed jobs, the states that grow to millions, are read from indexes
(``models.queue_figures``: queue names by a loose index scan, counts up to COUNT_CAP
per queue, latency from the poll index's first entry per queue); the other states'
tables hold what is in flight or waiting and are counted in full.

A custom collector (prometheus_client's documented way to expose values computed
elsewhere): the counters are sums that every process wrote to ``TaskRollup``, so they
add up across processes and machines and survive restarts; a process-local
``Counter`` could do neither.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from ..exceptions import CANCELLED_CLASS
from ..models import (
    FailedExecution,
    Job,
    Pause,
    Process,
    ReadyExecution,
    TaskPause,
    TaskRollup,
    states,
)
from ..models.job.durable import AWAITING_SIGNAL, SLEEPING
from ..models.queue_figures import COUNT_CAP, Counts, next_ready_at, queue_names
from ..models.task_rollup import BUCKETS

PREFIX = "steady_queue"
# Finished jobs are counted up to here: reading at most this many index entries keeps a
# scrape fast with millions kept (the counters say how many ever finished).
FINISHED_CAP = 100_000
# Fairness keys per queue with a series of their own in steady_queue_fair_share_ready.
FAIR_KEYS = 20
FAIR_OTHER = "other"
COUNTERS = {
    "succeeded": ("jobs_finished", "Jobs that ran successfully."),
    "failed": ("jobs_failed", "Jobs that failed for good (no retry left, a crash); not cancels."),
    "retried": ("jobs_retried", "Attempts that failed and were scheduled to run again."),
    "cancelled": ("jobs_cancelled", "Jobs cancelled (JobCancelled), before or while running."),
    "discarded": ("jobs_discarded", "Pending jobs an operator discarded before they ran."),
}


class QueueCollector:
    """Collect every Steady Queue metric; ``collect`` runs the queries."""

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        yield from _job_states(now)
        yield from _kept_and_paused()
        yield _fair_share_ready()
        yield _durable_waits()
        yield from _task_rollups()
        yield from _processes(now)

    def describe(self) -> list[Metric]:
        # Registering asks for a description; an empty one keeps that from querying.
        return []


def _job_states(now: datetime) -> Iterator[Metric]:
    jobs = GaugeMetricFamily(
        f"{PREFIX}_jobs",
        f"Jobs by state and queue ({', '.join(states.words()[:-1])}); "
        f"ready, failed and cancelled counted up to {COUNT_CAP} per queue.",
        labels=["queue", "state"],
    )
    latency = GaugeMetricFamily(
        f"{PREFIX}_queue_latency_seconds",
        "Age of the next ready job of each queue, the one a worker takes next "
        "(queues with a ready job only).",
        labels=["queue"],
    )
    # Ready and failed jobs may be millions: counted per queue up to COUNT_CAP from the
    # indexes that start with queue_name, the queues found by a loose scan of them.
    ready_queues, failed_queues = queue_names(ReadyExecution, FailedExecution)
    for queue, ready_at in sorted(next_ready_at(ready_queues).items()):
        latency.add_metric([queue], max((now - ready_at).total_seconds(), 0.0))
    counts = Counts()
    counts.add(states.READY, ReadyExecution, ready_queues)
    # Cancelled jobs are failed executions of their own class: both read from sq_failed_queue
    # (queue_name, exception_class).
    cancelled = [CANCELLED_CLASS]
    counts.add(states.FAILED, FailedExecution, failed_queues, "exception_class <> %s", cancelled)
    counts.add(states.CANCELLED, FailedExecution, failed_queues, "exception_class = %s", cancelled)
    for (state, queue), count in counts.run().items():
        jobs.add_metric([queue, state], count)
    # The other kinds hold what is in flight or waiting: counted in full, one query each.
    for kind in states.kinds():
        if kind.model in (ReadyExecution, FailedExecution):
            continue
        queues = kind.model.objects.values_list(_queue_field(kind.model))
        for queue, count in queues.annotate(jobs=Count("pk")).order_by():
            jobs.add_metric([queue, kind.name], count)
    yield jobs
    yield latency


def _queue_field(model) -> str:
    """Where a table's queue is: its own copy, or (running jobs) their job's."""
    names = {field.name for field in model._meta.get_fields()}
    return "queue_name" if "queue_name" in names else "job__queue_name"


def _kept_and_paused() -> Iterator[Metric]:
    """How many finished jobs the table keeps (capped), and which queues and tasks are paused."""
    finished = Job.objects.filter(finished_at__isnull=False).order_by()[: FINISHED_CAP + 1]
    yield GaugeMetricFamily(
        f"{PREFIX}_finished_jobs_kept",
        f"Finished jobs kept in the jobs table, counted up to {FINISHED_CAP}.",
        value=min(finished.count(), FINISHED_CAP),
    )
    paused = GaugeMetricFamily(
        f"{PREFIX}_queue_paused", "1 for each paused queue.", labels=["queue"]
    )
    for queue in Pause.objects.order_by("queue_name").values_list("queue_name", flat=True):
        paused.add_metric([queue], 1)
    yield paused
    tasks = GaugeMetricFamily(
        f"{PREFIX}_task_paused",
        "1 for each paused task (steady_queue.pauses); its jobs wait as paused.",
        labels=["task"],
    )
    for task in TaskPause.objects.order_by("task_path").values_list("task_path", flat=True):
        tasks.add_metric([task], 1)
    yield tasks


def _fair_share_ready() -> Metric:
    """Ready jobs of fair tasks per queue and key: each queue's FAIR_KEYS busiest keys and
    the rest summed as key="other", so that a million tenants are 21 series a queue. One
    query (grouped counts: on PostgreSQL an index-only scan of sq_ready_fair_key)."""
    family = GaugeMetricFamily(
        f"{PREFIX}_fair_share_ready",
        f"Ready jobs of @fair tasks by queue and fairness key: the {FAIR_KEYS} busiest keys "
        'of each queue, the others summed as key="other".',
        labels=["queue", "key"],
    )
    counts: dict[str, list[tuple[int, str]]] = defaultdict(list)
    rows = (
        ReadyExecution.objects.exclude(fairness_key="")
        .values_list("queue_name", "fairness_key")
        .annotate(ready=Count("pk"))
        .order_by()
    )
    for queue, key, ready in rows:
        counts[queue].append((-ready, key))
    for queue in sorted(counts):
        ranked = sorted(counts[queue])
        series = {key: -ready for ready, key in ranked[:FAIR_KEYS]}
        if len(ranked) > FAIR_KEYS:
            # A key spelled "other" among the busiest is counted in with the rest.
            rest = -sum(ready for ready, _ in ranked[FAIR_KEYS:])
            series[FAIR_OTHER] = series.get(FAIR_OTHER, 0) + rest
        for key, ready in series.items():
            family.add_metric([queue, key], ready)
    return family


def _durable_waits() -> Metric:
    """Durable jobs off the workers per task: sleeping, or waiting for a signal. Two grouped
    queries; one series per task that has such jobs (tasks are declared in code, so the
    series are as many as the tasks)."""
    family = GaugeMetricFamily(
        f"{PREFIX}_durable_jobs",
        "Durable jobs holding no worker, by task: sleeping (durable.sleep, state scheduled) "
        "or waiting for a signal (wait_for_signal, state waiting).",
        labels=["task", "kind"],
    )
    for kind, jobs in (
        (SLEEPING, Job.objects.sleeping()),
        (AWAITING_SIGNAL, Job.objects.awaiting_signal()),
    ):
        rows = jobs.values_list("task_path").annotate(jobs=Count("pk")).order_by("task_path")
        for task, count in rows:
            family.add_metric([task, kind], count)
    return family


def _task_rollups() -> Iterator[Metric]:
    """Counters per task and queue, run time per task, wait per queue: all-time rows."""
    counters = {
        field: CounterMetricFamily(f"{PREFIX}_{name}", help_text, labels=["task", "queue"])
        for field, (name, help_text) in COUNTERS.items()
    }
    runs: dict[str, list[float]] = defaultdict(lambda: [0.0] * (len(BUCKETS) + 2))
    waits: dict[str, list[float]] = defaultdict(lambda: [0.0] * (len(BUCKETS) + 2))
    rows = TaskRollup.objects.filter(period=TaskRollup.all_time()).order_by(
        "task_path", "queue_name"
    )
    for row in rows:
        for field, family in counters.items():
            family.add_metric([row.task_path, row.queue_name], getattr(row, field))
        _add(runs[row.task_path], row.run_buckets(), row.run_seconds)
        _add(waits[row.queue_name], row.wait_buckets(), row.wait_seconds)
    yield from counters.values()
    yield _histogram("job_run_duration_seconds", "How long attempts ran, per task.", "task", runs)
    yield _histogram(
        "job_wait_seconds",
        "How long jobs waited to start once due (enqueue or scheduled time to claim), per queue.",
        "queue",
        waits,
    )


def _add(totals: list[float], buckets: list[int], seconds: float) -> None:
    # [bucket counts..., +Inf count, sum]
    for index, count in enumerate(buckets):
        totals[index] += count
    totals[-1] += seconds


def _histogram(name: str, help_text: str, label: str, series: dict) -> HistogramMetricFamily:
    family = HistogramMetricFamily(f"{PREFIX}_{name}", help_text, labels=[label])
    bounds = [*(str(bound) for bound in BUCKETS), "+Inf"]
    for value in sorted(series):
        totals, cumulative, buckets = series[value], 0, []
        for bound, count in zip(bounds, totals[:-1], strict=True):
            cumulative += count
            buckets.append((bound, cumulative))
        family.add_metric([value], buckets, sum_value=totals[-1])
    return family


def _processes(now: datetime) -> Iterator[Metric]:
    live = GaugeMetricFamily(
        f"{PREFIX}_processes",
        "Live processes (heartbeat within the threshold) by kind.",
        labels=["kind"],
    )
    rows = Process.objects.values_list("kind").annotate(
        live=Count("pk", filter=Process.alive_condition(now)),
        oldest=Min("last_heartbeat_at"),
    )
    # Every kind, 0 included: "no live worker" is an alert on a value, not a missing series.
    counts, oldest = dict.fromkeys(Process.Kind.values, 0), None
    for kind, count, heartbeat in rows.order_by():
        counts[kind] = count
        oldest = heartbeat if oldest is None else min(oldest, heartbeat)
    for kind, count in counts.items():
        live.add_metric([kind], count)
    yield live
    yield GaugeMetricFamily(
        f"{PREFIX}_oldest_heartbeat_age_seconds",
        "Seconds since the oldest heartbeat of any registered process (0 with none).",
        value=max((now - oldest).total_seconds(), 0.0) if oldest else 0.0,
    )
