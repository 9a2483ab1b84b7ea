"""Any sequence of enqueue / claim / finish / fail / retry / discard / release / crash,
run in-process through the engine's own API, keeps the engine's books straight:

- every unfinished job sits in exactly one execution table, a finished one in none;
- each semaphore counts exactly the jobs holding a slot of its key (ready or claimed);
- no key ever has more holders than its limit, but for jobs released by hand
  (docs/reference/concurrency.md: they run over the limit, and take a slot all the same);
- no job waits while a slot is free.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import timedelta

import pytest
from django.db.models import Q
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from steady_queue.exceptions import JobStateError
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    Process,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
)
from steady_queue.processes import ProcessExitError
from steady_queue.runner.perform import perform
from steady_queue.testing import dispatch_scheduled
from tests.tasks import stateful as tasks

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = {
    "ready": ReadyExecution,
    "scheduled": ScheduledExecution,
    "claimed": ClaimedExecution,
    "blocked": BlockedExecution,
    "failed": FailedExecution,
}
KEYS = st.sampled_from(["a", "b"])
PICK = st.integers(min_value=0, max_value=1_000)


class Engine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        # transaction=True: rows of the previous example are still there.
        Job.objects.all().delete()
        Semaphore.objects.all().delete()
        Process.objects.all().delete()
        self.process = self._register()
        self.claims: list[ClaimedExecution] = []  # late finishes of lost claims included
        self.released: set[int] = set()  # released by hand, while they hold their slot

    def _register(self) -> Process:
        name = f"worker-{os.urandom(4).hex()}"
        return Process.register(kind=Process.Kind.WORKER, name=name, pid=os.getpid())

    def _pick(self, relation: str, index: int) -> Job | None:
        jobs = list(Job.objects.filter(**{f"{relation}__isnull": False}).order_by("pk"))
        return jobs[index % len(jobs)] if jobs else None

    @rule(
        task=st.sampled_from(tasks.ALL),
        key=KEYS,
        later=st.booleans(),
        count=st.integers(min_value=1, max_value=3),
    )
    def enqueue(self, task, key, later, count):
        """``count`` jobs with the same key: more than the limit of two wait, blocked."""
        if later:
            task = task.using(run_after=timedelta(hours=1))
        for _ in range(count):
            task.enqueue(key)

    @rule()
    def dispatch_scheduled_jobs(self):
        dispatch_scheduled(all_=True)

    @rule(count=st.integers(min_value=1, max_value=3))
    def claim(self, count):
        self.claims += ReadyExecution.claim(["*"], count, self.process)

    @rule(index=PICK)
    def perform_a_claim(self, index):
        """Finish (succeed or fail) a claimed job; a claim lost meanwhile changes nothing."""
        if self.claims:
            perform(self.claims.pop(index % len(self.claims)))

    @rule()
    def crash(self):
        """The worker dies: its claims fail (or retry, at least once); a new one starts."""
        self.process.fail_all_claimed_executions_with(ProcessExitError("killed by signal 9"))
        self.process.deregister(release_claims=False)
        self.process = self._register()

    @rule()
    def stop_past_shutdown_timeout(self):
        """QUIT, or a graceful stop that outlasted shutdown_timeout: claims back to ready."""
        self.process.deregister(release_claims=True)
        self.process = self._register()

    @rule(index=PICK)
    def retry(self, index):
        if job := self._pick("failed_execution", index):
            job.retry()

    @rule(index=PICK, relation=st.sampled_from(sorted(f"{name}_execution" for name in TABLES)))
    def discard(self, index, relation):
        if job := self._pick(relation, index):
            try:
                job.discard()
            except JobStateError:
                assert relation == "claimed_execution"  # a running job cannot be discarded

    @rule(index=PICK)
    def release(self, index):
        """The dashboard's Release of a blocked job."""
        if job := self._pick("blocked_execution", index):
            job.release(force=True)
            self.released.add(job.pk)

    @invariant()
    def each_job_is_in_exactly_one_place(self):
        places = Counter()
        where = {}
        for name, model in TABLES.items():
            for job_id in model.objects.values_list("job_id", flat=True):
                places[job_id] += 1
                where.setdefault(job_id, []).append(name)
        for job_id, finished_at in Job.objects.values_list("pk", "finished_at"):
            expected = 0 if finished_at else 1
            assert places.pop(job_id, 0) == expected, (job_id, finished_at, where.get(job_id))
        assert not places, f"execution rows of deleted jobs: {dict(places)}"

    @invariant()
    def semaphores_count_their_holders(self):
        limited = Job.objects.exclude(concurrency_key="")
        holding = limited.filter(
            Q(ready_execution__isnull=False) | Q(claimed_execution__isnull=False)
        ).values_list("pk", "concurrency_key")
        holders, over = Counter(), Counter()
        self.released &= {pk for pk, _ in holding}  # a retried job queues like a new one
        for pk, key in holding:
            holders[key] += 1
            over[key] += pk in self.released
        free = dict(Semaphore.objects.values_list("key", "value"))
        waiting = set(BlockedExecution.objects.values_list("concurrency_key", flat=True))
        for key in holders.keys() | free.keys() | waiting:
            assert holders[key] - over[key] <= tasks.LIMIT, f"{holders[key]} hold a slot of {key}"
            assert free.get(key, tasks.LIMIT) == tasks.LIMIT - holders[key], (
                f"{key}: semaphore says {free.get(key)} free, {holders[key]} jobs hold a slot"
            )
            if key in waiting:
                assert holders[key] >= tasks.LIMIT, f"jobs wait on {key} with a slot free"


def test_engine_books_stay_straight():
    run_state_machine_as_test(
        Engine,
        settings=settings(
            max_examples=50,
            stateful_step_count=25,
            deadline=None,
            # No shrinking: it can take minutes on a database; the failing steps are printed.
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
        ),
    )
