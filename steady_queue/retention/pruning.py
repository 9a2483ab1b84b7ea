"""Pruning: delete (or archive) what the retention rules no longer keep, a batch at a time.

``Pruning`` goes through the effective rules (``rules.effective_rules``), then the rows
kept by age rather than by rule (finished batches and workflow runs whose jobs are all
gone, hourly task rollups, idle rate limit windows, expired unique locks, old archived
jobs and prune tallies). Each ``step()`` does one batch:

- the candidates are chosen with a plain read (oldest first, along an index), outside
  any transaction;
- one short transaction then locks those still eligible with SKIP LOCKED (a row a
  worker or an operator holds is left for the next pass, never waited for), copies them
  to the archive if the rule says so, and deletes them by primary key.

A job is only ever pruned in an end state (finished, or failed / cancelled with its
failed row locked), so a job with a live execution never is. A dispatcher runs one step
per poll while a pass lasts (``processes.dispatcher``); ``manage.py steady_queue_prune``
runs a whole pass, pausing ``steady_queue.prune_pause`` between batches. What each rule
removed is written to ``PruneTally`` when the rule is done.

With ``steady_queue.partition_finished_by = "day"`` on PostgreSQL the pass also moves
the default succeeded rule's jobs to the partitioned finished history and drops its old
days (``history``), after the rules' own targets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

import steady_queue

from .. import db
from ..configuration import seconds
from ..models import (
    ArchivedJob,
    Batch,
    FailedExecution,
    Job,
    PruneTally,
    RateLimitBucket,
    TaskRollup,
    UniqueLock,
    WorkflowDependency,
    WorkflowRun,
    WorkflowStep,
    states,
)
from ..models import prune_tally as kinds
from ..models.job.clearable import delete_jobs
from . import history
from .rules import Retention, duration_in_words, effective_rules, problems

logger = logging.getLogger("steady_queue.retention")


@dataclass
class Removed:
    """What one rule removed (or, in a dry run, would remove)."""

    rule: str
    kind: str = kinds.JOBS
    removed: int = 0
    archived: int = 0
    seconds: float = 0.0


@dataclass
class _Target:
    """One rule's rows: how to find a batch of candidates, and how to remove them."""

    rule: str
    kind: str
    # The candidates' primary keys, oldest first (a plain read).
    candidates: Callable[[int], list]
    # Removes those still eligible, in the caller's transaction; returns (removed, archived).
    remove: Callable[[list], tuple[int, int]]
    # All the rows the rule would remove now (a dry run counts them).
    eligible: Callable[[], QuerySet]
    tally: Removed = field(init=False)

    def __post_init__(self) -> None:
        self.tally = Removed(self.rule, self.kind)


def check_rules() -> list[Retention]:
    """The effective rules, or ``ImproperlyConfigured`` naming the bad ones: pruning under
    rules it cannot read would delete what someone meant to keep."""
    if found := problems():
        raise ImproperlyConfigured(
            "Not pruning: steady_queue.retention_rules has bad rules: " + " ".join(found)
        )
    return effective_rules()


class Pruning:
    """One pass over every rule, a batch per ``step()``; ``run()`` does the whole pass."""

    def __init__(self, *, batch_size: int | None = None, now: datetime | None = None):
        self.batch_size = batch_size or steady_queue.prune_batch_size
        self.now = now or timezone.now()
        self.rules = check_rules()
        self.results: list[Removed] = []
        self._current: _Target | None = None
        self._steps = self._batches()

    def step(self) -> bool:
        """Prune one batch; False once the pass is over."""
        return next(self._steps, None) is not None

    def run(self, pause: float | timedelta | None = None) -> list[Removed]:
        """Prune every batch, pausing ``pause`` (default ``steady_queue.prune_pause``)
        between two; return what each rule removed."""
        wait = seconds(steady_queue.prune_pause if pause is None else pause)
        while self.step():
            time.sleep(wait)
        return self.results

    def dry_run(self) -> list[Removed]:
        """What each rule would remove now, counted; writes nothing."""
        return [
            Removed(target.rule, target.kind, target.eligible().count())
            for target in self.targets()
        ]

    def targets(self) -> Iterator[_Target]:
        """The rules' targets, in order: the jobs' rules, then the rows kept by age."""
        for rule in self.rules:
            if rule.keep is not None:
                yield _job_target(rule, self.rules, self.now)
        if history.enabled():
            yield from history.targets(self.rules, self.now, _Target, _scope)
        yield from _aged_targets(self.now)

    def _batches(self) -> Iterator[bool]:
        for target in self.targets():
            self._current, started = target, time.monotonic()
            while ids := target.candidates(self.batch_size):
                removed, archived = db.retry_deadlocks(partial(_in_transaction, target, ids))
                target.tally.removed += removed
                target.tally.archived += archived
                target.tally.seconds = time.monotonic() - started
                yield True
                if removed == 0:
                    break  # all held by others: left for the next pass
            self._current = None
            self._record(target.tally)

    def close(self) -> None:
        """Stop the pass where it is, recording what the rule under way removed so far."""
        self._steps.close()
        if self._current is not None:
            self._record(self._current.tally)
            self._current = None

    def _record(self, tally: Removed) -> None:
        if tally.removed:
            self.results.append(tally)
            PruneTally.objects.create(
                ran_at=self.now,
                rule=tally.rule,
                kind=tally.kind,
                removed=tally.removed,
                archived=tally.archived,
                seconds=tally.seconds,
            )
            logger.info("Pruned %d %s (%s)", tally.removed, tally.kind, tally.rule)


def prune(
    *, batch_size: int | None = None, pause: float | timedelta | None = None
) -> list[Removed]:
    """Apply the retention rules now, a batch at a time; return what each rule removed."""
    return Pruning(batch_size=batch_size).run(pause)


#: How a pruning transaction shows in PostgreSQL's pg_stat_activity (application_name).
SESSION_NAME = "steady_queue pruning"


def _in_transaction(target: _Target, ids: list) -> tuple[int, int]:
    with db.atomic():
        db.background_transaction(SESSION_NAME)
        return target.remove(ids)


# -- jobs --------------------------------------------------------------------------------


def _job_target(rule: Retention, rules: list[Retention], now: datetime) -> _Target:
    cutoff = now - rule.keep
    state = rule.job_state
    if state == states.FINISHED:
        rows = Job.objects.filter(_scope(rule, rules, ""), finished_at__lt=cutoff)
        return _Target(
            rule.describe(),
            kinds.JOBS,
            candidates=lambda size: list(
                rows.order_by("finished_at").values_list("pk", flat=True)[:size]
            ),
            remove=lambda ids: _remove_finished(rows, ids, rule),
            eligible=lambda: rows,
        )
    condition = states.get(state).row_condition
    rows = FailedExecution.objects.filter(
        condition, _scope(rule, rules, "job__"), created_at__lt=cutoff
    )
    return _Target(
        rule.describe(),
        kinds.JOBS,
        candidates=lambda size: list(
            rows.order_by("created_at").values_list("job_id", flat=True)[:size]
        ),
        remove=lambda ids: _remove_failed(rows, ids, rule),
        eligible=lambda: rows,
    )


def _scope(rule: Retention, rules: list[Retention], prefix: str) -> Q:
    """The jobs ``rule`` covers: its task's, or its queue's but those of a task rule, or
    the state's but those of a task or queue rule (the most specific rule wins)."""
    same_state = [other for other in rules if other.job_state == rule.job_state]
    tasks = sorted({other.task for other in same_state if other.task is not None})
    queues = sorted({other.queue for other in same_state if other.queue is not None})
    if rule.task is not None:
        return Q(**{f"{prefix}task_path": rule.task})
    scope = ~Q(**{f"{prefix}task_path__in": tasks}) if tasks else Q()
    if rule.queue is not None:
        return scope & Q(**{f"{prefix}queue_name": rule.queue})
    return scope & ~Q(**{f"{prefix}queue_name__in": queues}) if queues else scope


def _remove_finished(rows: QuerySet, ids: list, rule: Retention) -> tuple[int, int]:
    locked = rows.filter(pk__in=ids).order_by("pk").locked()
    if rule.archive:
        jobs = list(locked)
        _archive(jobs, {}, rule)
        ids = [job.pk for job in jobs]
    else:
        ids = list(locked.values_list("pk", flat=True))
    if ids:
        delete_jobs(Job, ids)
    return len(ids), len(ids) if rule.archive else 0


def _remove_failed(rows: QuerySet, ids: list, rule: Retention) -> tuple[int, int]:
    # The failed rows are what a retry locks (SKIP LOCKED too): one held by a retry is
    # left alone, and once locked here no retry moves the job until it is gone.
    locked = rows.filter(job_id__in=ids).order_by("job_id")
    if rule.archive:
        failures = list(locked.select_related("job").locked(only_self=True))
        _archive([failure.job for failure in failures], {f.job_id: f for f in failures}, rule)
        ids = [failure.job_id for failure in failures]
    else:
        ids = list(locked.locked().values_list("job_id", flat=True))
    if ids:
        delete_jobs(Job, ids)
    return len(ids), len(ids) if rule.archive else 0


def _archive(jobs: list[Job], failures: dict, rule: Retention) -> None:
    ArchivedJob.objects.bulk_create(
        [ArchivedJob.from_job(job, failures.get(job.pk), rule=rule.describe()) for job in jobs]
    )


# -- rows kept by age --------------------------------------------------------------------


def _aged_targets(now: datetime) -> Iterator[_Target]:
    groups_kept = steady_queue.finished_groups_kept
    if groups_kept is not None:
        cutoff = now - groups_kept
        batches = Batch.objects.filter(finished_at__lt=cutoff).exclude(
            Exists(Job.objects.filter(batch_id=OuterRef("pk")))
        )
        yield _by_pk(f"finished batches kept {_days(groups_kept)}", kinds.BATCHES, batches)
        runs = WorkflowRun.objects.filter(finished_at__lt=cutoff).exclude(
            Exists(Job.objects.filter(workflow_run_id=OuterRef("pk")))
        )
        yield _by_pk(
            f"finished workflow runs kept {_days(groups_kept)}",
            kinds.WORKFLOW_RUNS,
            runs,
            before=_delete_steps,
        )
    if (rollups_kept := steady_queue.task_rollups_kept) is not None:
        hourly = TaskRollup.objects.filter(period__lt=now - rollups_kept).exclude(
            period=TaskRollup.all_time()
        )
        yield _by_pk(f"hourly task rollups kept {_days(rollups_kept)}", kinds.TASK_ROLLUPS, hourly)
    yield _Target(
        "idle rate limit windows",
        kinds.RATE_LIMIT_WINDOWS,
        candidates=lambda size: [size] if _idle_windows(now).exists() else [],
        remove=lambda sizes: (RateLimitBucket.prune(sizes[0]), 0),
        eligible=lambda: _idle_windows(now),
    )
    expired = UniqueLock.objects.filter(expires_at__lt=now)
    yield _by_pk("expired unique locks", kinds.UNIQUE_LOCKS, expired, order="expires_at")
    if (archive_kept := steady_queue.archived_jobs_kept) is not None:
        old = ArchivedJob.objects.filter(archived_at__lt=now - archive_kept)
        yield _by_pk(
            f"archived jobs kept {_days(archive_kept)}", kinds.ARCHIVED_JOBS, old, "archived_at"
        )
    tallies = PruneTally.objects.filter(ran_at__lt=now - steady_queue.prune_tallies_kept)
    yield _by_pk(
        f"prune tallies kept {_days(steady_queue.prune_tallies_kept)}",
        kinds.PRUNE_TALLIES,
        tallies,
        "ran_at",
    )


def _by_pk(
    rule: str,
    kind: str,
    rows: QuerySet,
    order: str = "pk",
    before: Callable[[list], None] | None = None,
) -> _Target:
    def remove(ids: list) -> tuple[int, int]:
        held = list(rows.filter(pk__in=ids).order_by("pk").locked().values_list("pk", flat=True))
        if held:
            if before is not None:
                before(held)
            rows.model.objects.filter(pk__in=held).delete()
        return len(held), 0

    return _Target(
        rule,
        kind,
        candidates=lambda size: list(rows.order_by(order).values_list("pk", flat=True)[:size]),
        remove=remove,
        eligible=lambda: rows,
    )


def _delete_steps(run_ids: list) -> None:
    """A workflow run's steps and their links go with it (they outlive their jobs)."""
    links = Q(step__run_id__in=run_ids) | Q(upstream__run_id__in=run_ids)
    WorkflowDependency.objects.filter(links).delete()
    WorkflowStep.objects.filter(run_id__in=run_ids).delete()


def _idle_windows(now: datetime) -> QuerySet:
    return RateLimitBucket.objects.filter(next_release_at__isnull=True, expires_at__lt=now)


def _days(kept: timedelta) -> str:
    return duration_in_words(kept)
