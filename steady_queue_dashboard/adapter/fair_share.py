"""Fair share through the engine's ``steady_queue.fairness``: a queue's busiest fairness
keys, their weights (declared or set at runtime), and setting and clearing a weight.

A queue's panel takes one query when no job of a fair task is ready in it, else five,
whatever the number of keys or jobs: the ready rows grouped by key (one pass over the
queue's ready rows), how many keys there are, the last hour's runs (at most
``RUN_SAMPLE`` of the newest finished jobs, through the ``(queue_name, finished_at)``
index), the task of each shown key's oldest job, and the weights set at runtime for the
shown keys.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Min
from django.utils import timezone
from django.utils.translation import gettext as _

from steady_queue import fairness as fairness_api
from steady_queue.models import FairWeight, Job, ReadyExecution
from steady_queue.models.fair_weight import ALL_TASKS
from steady_queue.task_options import fairness

from .actions import Outcome

#: Keys a queue's panel (and the metric) shows, the busiest first.
SHOWN_KEYS = 20
#: Runs of the last hour read at most (the newest): shares are of these.
RUN_SAMPLE = 20_000
RUN_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Weight:
    """A key's weight now: ``overridden`` when set at runtime (``set_at``)."""

    weight: int
    overridden: bool = False
    set_at: datetime | None = None
    task_path: str = ""


@dataclass(frozen=True)
class FairKey:
    """One key of a queue: "" is the jobs of tasks without ``@fair`` (one more key)."""

    key: str
    ready: int
    oldest_job_id: int
    oldest_at: datetime
    # The task of its oldest ready job, whose declaration gives its weight.
    task_path: str
    weight: Weight
    runs: int
    run_share: float | None
    weight_share: float


@dataclass(frozen=True)
class FairShare:
    keys: list[FairKey]
    key_count: int
    runs: int
    # The runs were more than RUN_SAMPLE: the shares are of the newest RUN_SAMPLE.
    runs_capped: bool

    @property
    def is_fair(self) -> bool:
        """Whether any ready job of the queue belongs to a fair task."""
        return any(row.key for row in self.keys)

    @property
    def more_keys(self) -> int:
        return max(self.key_count - len(self.keys), 0)


def fair_share(queue: str) -> FairShare:
    """The busiest ``SHOWN_KEYS`` keys of ``queue``'s ready jobs, with their shares."""
    ready = ReadyExecution.objects.filter(queue_name=queue).order_by()
    groups = list(
        ready.values("fairness_key")
        .annotate(ready=Count("pk"), oldest_job_id=Min("job_id"), oldest_at=Min("created_at"))
        .order_by("-ready", "fairness_key")[:SHOWN_KEYS]
    )
    if not any(group["fairness_key"] for group in groups):
        return FairShare([], 0, 0, False)  # no fair job waits: no panel, no more queries
    key_count = ready.values("fairness_key").distinct().count()
    runs, sampled = _recent_runs(queue)
    tasks = dict(
        Job.objects.filter(pk__in=[group["oldest_job_id"] for group in groups]).values_list(
            "pk", "task_path"
        )
    )
    weights = weights_of(
        [(group["fairness_key"], tasks.get(group["oldest_job_id"], "")) for group in groups]
    )
    return FairShare(
        _rows(groups, tasks, weights, runs, sampled, key_count),
        key_count,
        sampled,
        sampled >= RUN_SAMPLE,
    )


def _rows(groups, tasks, weights, runs, sampled, key_count) -> list[FairKey]:
    # Keys beyond those shown count at weight 1: reading each one's weight would take a
    # query per key, and most keys keep the default.
    total_weight = sum(w.weight for w in weights.values()) + max(key_count - len(groups), 0)
    rows = []
    for group in groups:
        key = group["fairness_key"]
        weight = weights[key]
        rows.append(
            FairKey(
                key=key,
                ready=group["ready"],
                oldest_job_id=group["oldest_job_id"],
                oldest_at=group["oldest_at"],
                task_path=tasks.get(group["oldest_job_id"], ""),
                weight=weight,
                runs=runs.get(key, 0),
                run_share=runs.get(key, 0) / sampled if sampled else None,
                weight_share=weight.weight / total_weight,
            )
        )
    return rows


def _recent_runs(queue: str) -> tuple[Counter, int]:
    """Runs per key among the queue's newest finished jobs of the last hour (capped)."""
    since = timezone.now() - RUN_WINDOW
    keys = (
        Job.objects.filter(queue_name=queue, finished_at__gte=since)
        .order_by("-finished_at")
        .values_list("fairness_key", flat=True)[:RUN_SAMPLE]
    )
    counts = Counter(keys)
    return counts, sum(counts.values())


def weights_of(keys: list[tuple[str, str]]) -> dict[str, Weight]:
    """The weight now of each (key, task path): a runtime weight for the task, else one for
    every task, else the task's declared one (1 for a task without ``@fair``). One query."""
    names = {key for key, _task in keys if key}
    overrides = (
        {(row.task_path, row.key): row for row in FairWeight.objects.filter(key__in=names)}
        if names
        else {}
    )
    weights = {}
    for key, task_path in keys:
        row = overrides.get((task_path, key)) or overrides.get((ALL_TASKS, key))
        if row is not None:
            weights[key] = Weight(row.weight, True, row.set_at, row.task_path)
        else:
            weights[key] = Weight(_declared(task_path, key))
    return weights


def _declared(task_path: str, key: str) -> int:
    declaration = fairness.fairness_for(task_path) if key and task_path else None
    return declaration.weight_for(task_path, key) if declaration else 1


def fair_weight_of(key: str, task_path: str | None) -> Weight:
    """The weight set at runtime for ``key`` (in ``task_path``, or every task), if any."""
    row = FairWeight.objects.filter(task_path=task_path or ALL_TASKS, key=key).first()
    if row is None:
        return Weight(_declared(task_path or "", key))
    return Weight(row.weight, True, row.set_at, row.task_path)


def fair_task_check(task_path: str) -> str | None:
    """Why ``task_path`` cannot take a key's weight: a message; None when it is a fair task."""
    if "\x00" in task_path or fairness.fairness_for(task_path) is None:
        return _("%(task)s is not a fair task (one declared with @fair).") % {"task": task_path}
    return None


def set_fair_weight(key: str, weight: int, task_path: str | None, actor: str) -> Outcome:
    """Set ``key``'s weight through the engine, which audits it as ``actor``."""
    moved = fairness_api.set_weight(key, weight, task=task_path, actor=actor)
    where = task_path or _("every fair task")
    return Outcome(
        True,
        _("Fairness key %(key)s now weighs %(weight)d in %(where)s.")
        % {"key": key, "weight": weight, "where": where},
        moved,
    )


def clear_fair_weight(key: str, task_path: str | None, actor: str) -> Outcome:
    """Clear ``key``'s runtime weight (audited by the engine as ``actor``), if one is set."""
    where = task_path or _("every fair task")
    if not fair_weight_of(key, task_path).overridden:
        return Outcome(
            False,
            _("No weight is set for fairness key %(key)s in %(where)s.")
            % {"key": key, "where": where},
        )
    moved = fairness_api.clear_weight(key, task=task_path, actor=actor)
    return Outcome(
        True,
        _("Fairness key %(key)s weighs what its task declares again, in %(where)s.")
        % {"key": key, "where": where},
        moved,
    )
