"""Pickup latency per fairness key, for the Tasks page: how long each busy key's jobs of
a fair task waited to start over the last hour (p50 and p95).

One query: the newest ``SAMPLE`` jobs of the fair tasks shown that finished in the last
hour (through the ``(task_path, finished_at)`` index), their wait read from their first
attempt. Jobs that ran more than once are left out: a retry's wait is not a pickup.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from steady_queue.models import Job
from steady_queue.task_options import fairness

SAMPLE = 5_000
#: Keys shown per task, the busiest first.
KEYS_PER_TASK = 5
WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class KeyLatency:
    key: str
    runs: int
    p50: float
    p95: float


def fair_latencies(task_paths: list[str], queue: str | None = None) -> dict[str, list[KeyLatency]]:
    """The busiest keys of each fair task among ``task_paths``, with their pickup latency."""
    fair_paths = [path for path in task_paths if fairness.fairness_for(path) is not None]
    if not fair_paths:
        return {}
    jobs = Job.objects.filter(task_path__in=fair_paths, finished_at__gte=timezone.now() - WINDOW)
    if queue:
        jobs = jobs.filter(queue_name=queue)
    rows = jobs.order_by("-finished_at").values_list(
        "task_path", "fairness_key", "created_at", "scheduled_at", "attempts"
    )[:SAMPLE]
    waits: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for task_path, key, created_at, scheduled_at, attempts in rows:
        wait = _wait(created_at, scheduled_at, attempts)
        if wait is not None:
            waits[task_path][key].append(wait)
    return {path: _busiest(keys) for path, keys in sorted(waits.items())}


def _wait(created_at, scheduled_at, attempts) -> float | None:
    if not isinstance(attempts, list) or len(attempts) != 1:
        return None
    started = parse_datetime(str(attempts[0].get("started_at") or ""))
    if started is None:
        return None
    due = max(created_at, scheduled_at) if scheduled_at else created_at
    return max((started - due).total_seconds(), 0.0)


def _busiest(keys: dict[str, list[float]]) -> list[KeyLatency]:
    ranked = sorted(keys.items(), key=lambda item: (-len(item[1]), item[0]))[:KEYS_PER_TASK]
    return [
        KeyLatency(key, len(waits), _percentile(waits, 0.5), _percentile(waits, 0.95))
        for key, waits in ranked
    ]


def _percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile: a wait that some job really had."""
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]
