"""Operator actions on jobs: discard, dispatch now, release (one job, or a whole queryset)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from django.db import models

from ... import db
from ...exceptions import JobStateError
from ...task_options import concurrency
from .. import states
from ..signals import jobs_ended
from ..task_rollup import count_jobs
from .retryable import state_of


class Operations:
    """One-job actions; each raises JobStateError when it does not apply."""

    def discard(self) -> None:
        """Delete this job unless it is running; release its semaphore if it held one."""
        if type(self).objects.filter(pk=self.pk).discard_all() == 0:
            state = state_of(self)
            if state == states.RUNNING:
                raise JobStateError(f"Job {self.pk} is running: a running job cannot be discarded.")
            discardable = states.in_words(states.names_where("discardable"))
            raise JobStateError(
                f"Job {self.pk} is {state}: only {discardable} jobs can be discarded."
            )
        self._state.fields_cache.clear()

    def dispatch_now(self) -> None:
        """Make this scheduled job ready now instead of at its scheduled time."""
        if type(self).objects.filter(pk=self.pk).dispatch_all_now() == 0:
            raise JobStateError(
                f"Job {self.pk} is {state_of(self)}: only scheduled jobs can be dispatched now."
            )
        self._state.fields_cache.clear()

    def release(self, force: bool = False) -> bool:
        """Make this blocked job ready if a slot of its key is free; return whether it did.

        Without a free slot the job stays blocked (False), as in Solid Queue. With
        ``force`` it takes a slot anyway and runs over the limit, as the operator asked:
        it holds its slot like any other, so no other job of the key starts until fewer
        than ``to`` hold one.
        """
        from ..execution import BlockedExecution

        with db.atomic():
            blocked = BlockedExecution.objects.filter(job_id=self.pk).locked().first()
            if blocked is None:
                raise JobStateError(
                    f"Job {self.pk} is {state_of(self)}: only blocked jobs can be released."
                )
            released = bool(_release_blocked([self], force))
        self._state.fields_cache.clear()
        return released


class OperationsQuerySet(models.QuerySet):
    """Bulk actions on the jobs of a queryset, a batch per transaction; each returns how many."""

    def discard_all(self, batch_size: int = 500) -> int:
        """Delete the jobs of this queryset in a discardable state; return how many.

        Running jobs are left alone. Work goes a batch at a time.
        """
        return sum(
            in_batches(executions_of(self, kind.relation), batch_size, _discard)
            for kind in states.kinds()
            if kind.discardable
        )

    def dispatch_all_now(self, batch_size: int = 500) -> int:
        """Make the scheduled jobs of this queryset ready now; return how many."""
        from ..execution import ScheduledExecution

        scheduled = executions_of(self, "scheduled_execution")
        dispatched = 0
        while True:
            with db.atomic():
                locked = scheduled.order_by("job_id").locked()
                ids = list(locked.values_list("job_id", flat=True)[:batch_size])
                if not ids:
                    return dispatched
                dispatched += ScheduledExecution.dispatch_jobs(ids)

    def release_all(self, force: bool = False, batch_size: int = 500) -> int:
        """Make the blocked jobs of this queryset ready where a slot of their key is free
        (all of them, over the limit, with ``force``); return how many.

        The others stay blocked. Within each batch the free slots go to the jobs of
        highest priority first, as the dispatcher would give them.
        """
        from . import Job

        blocked = executions_of(self, "blocked_execution").order_by("job_id")
        released, after = 0, 0
        while True:
            with db.atomic():
                locked = blocked.filter(job_id__gt=after).locked()
                ids = list(locked.values_list("job_id", flat=True)[:batch_size])
                if not ids:
                    return released
                after = ids[-1]
                jobs = list(Job.objects.filter(pk__in=ids).order_by("-priority", "pk"))
                released += len(_release_blocked(jobs, force))


def _release_blocked(jobs: list, force: bool) -> list[int]:
    """Move the blocked ``jobs`` (rows locked) to ready where a slot is free, or all of
    them with ``force``; return the ids moved. A key found full is not asked again."""
    from ..execution import BlockedExecution, ReadyExecution
    from ..semaphore import Semaphore

    moved, full = [], set()
    for job in jobs:
        limit = job.concurrency_limit
        if job.is_concurrency_limited and limit is not None:
            if force:
                # Without a slot, its finish would give back one it never took.
                Semaphore.take_over_limit(job.concurrency_key, limit)
            elif job.concurrency_key in full or not Semaphore.wait(job.concurrency_key, limit):
                full.add(job.concurrency_key)
                continue
        moved.append(job)
    if moved:
        BlockedExecution.objects.filter(job_id__in=[job.pk for job in moved]).delete()
        ReadyExecution.create_all_from_jobs(moved)
    return [job.pk for job in moved]


def executions_of(jobs: models.QuerySet, relation: str) -> models.QuerySet:
    model = jobs.model._meta.get_field(relation).related_model
    return model.objects.filter(job__in=jobs.values("pk"))


def in_batches(executions: models.QuerySet, batch_size: int, end: Callable) -> int:
    """End the jobs of ``executions``, ``batch_size`` per transaction; return how many.

    Each batch's execution rows are locked, then ``end(execution_model, ids, jobs)``
    ends their jobs; the concurrency slots that ready jobs held are handed on after
    the commit, as when a job finishes (maintenance catches up after a crash).
    """
    from ..execution import ReadyExecution
    from . import Job

    ended = 0
    while True:
        with db.atomic():
            locked = executions.order_by("job_id").locked()
            ids = list(locked.values_list("job_id", flat=True)[:batch_size])
            if not ids:
                return ended
            jobs = Job.objects.filter(pk__in=ids)
            # Only a ready job holds a semaphore slot (blocked and throttled ones wait
            # for one, failed ones gave theirs back).
            held = semaphores_held(jobs) if executions.model is ReadyExecution else Counter()
            end(executions.model, ids, jobs)
        give_back(held)
        ended += len(ids)


def _discard(execution_model: type[models.Model], ids: list[int], jobs: models.QuerySet) -> None:
    from ..execution import FailedExecution
    from .groups import jobs_failed

    if execution_model is not FailedExecution:  # a failed job was counted as failed
        count_jobs(jobs, "discarded")
        # Their rows go first: a waiting workflow step discarded with a step it depends on
        # is no longer waiting, so that failure does not fail it (DependencyFailed) with a
        # row that would outlive its deleted job.
        execution_model.objects.filter(job_id__in=ids).delete()
        jobs_failed(ids)
    _delete_jobs(execution_model, ids)


def _delete_jobs(execution_model: type[models.Model], ids: list[int]) -> None:
    from ..durable import JobSignal, JobStep
    from ..label import JobLabel
    from ..recurring import RecurringExecution
    from ..run_log import JobLogLine
    from ..unique_lock import UniqueLock
    from . import Job

    # The locked execution row is each job's only one, so eight plain DELETEs do what
    # Django's cascading delete would do with a SELECT of whole jobs and a DELETE per table.
    execution_model.objects.filter(job_id__in=ids).delete()
    JobLogLine.objects.filter(job_id__in=ids).delete()  # what its attempts logged
    JobLabel.objects.filter(job_id__in=ids).delete()
    JobStep.objects.filter(job_id__in=ids).delete()  # what its durable calls recorded
    JobSignal.objects.filter(job_id__in=ids).delete()
    RecurringExecution.objects.filter(job_id__in=ids).delete()
    UniqueLock.objects.filter(job_id__in=ids).delete()
    jobs = Job.objects.filter(pk__in=ids)
    jobs._raw_delete(jobs.db)
    jobs_ended.send(execution_model, job_ids=ids)


def semaphores_held(jobs: models.QuerySet) -> Counter:
    limited = jobs.exclude(concurrency_key="").values_list("task_path", "concurrency_key")
    return Counter(limited)


def give_back(held: Counter) -> None:
    # Outside the discarding transaction, as when a job finishes: maintenance catches up.
    from ..execution import BlockedExecution
    from ..semaphore import Semaphore

    for (task_path, key), count in held.items():
        limit = concurrency.limit_for(task_path)
        if limit is not None:
            Semaphore.signal(key, limit, count)
        # Each release takes its slot through the semaphore: it never over-admits.
        for _ in range(count):
            if not BlockedExecution.release_one(key):
                break
