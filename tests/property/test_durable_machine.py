"""Any sequence of enqueue / run / wake / signal / timeout / retry / cancel / crash over
durable jobs, run in-process through the public API, keeps durable execution's promises:

- a step's body runs again only after a crash between its return and its record (the
  crash injected at the record): per job and step, runs - crashes is 0 or 1 (since the
  last ``retry(reset_steps=True)``), and 1 exactly when the step is recorded;
- each step, sleep and wait is recorded at most once per job;
- ``send_signal`` refuses exactly the jobs that ended, a name sent twice and a wait over,
  and a job never waits for a signal that came;
- a finished job returned each step's value and, at its wait, the payload sent (or
  "timed out"); every unfinished job is in exactly one state.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from django.db.models import Count
from django.db.models.signals import pre_save
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from steady_queue.durable import send_signal
from steady_queue.exceptions import SignalNotDeliverable
from steady_queue.models import ClaimedExecution, Job, JobSignal, JobStep, WaitingExecution, states
from steady_queue.testing import run_ready_jobs
from tests.durable.helpers import expire, wake
from tests.tasks import durable as tasks

pytestmark = pytest.mark.django_db(transaction=True)

PICK = st.integers(min_value=0, max_value=1_000)
ARMED: set[int] = set()  # jobs whose next step record is "killed" before it is written
CRASHES: Counter = Counter()  # (job id, step name): crashes injected at its record
_numbers = itertools.count()


def _killed(sender, instance, **kwargs):
    if instance.kind == "step" and instance.job_id in ARMED:
        ARMED.discard(instance.job_id)
        CRASHES[(instance.job_id, instance.name)] += 1
        raise RuntimeError("killed between the step's return and its record")


class DurableJobs(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        # transaction=True: rows of the previous example are still there.
        Job.objects.all().delete()
        tasks.BODIES.clear()
        tasks.RAISED.clear()
        ARMED.clear()
        CRASHES.clear()
        self.since_reset: dict[int, Counter] = {}  # a job's runs and crashes at its reset
        self.payloads: dict[int, int] = {}  # the payload each job was sent

    def _pick(self, index: int, condition=None) -> Job | None:
        jobs = Job.objects.with_execution().order_by("pk")
        jobs = list(jobs.filter(condition) if condition is not None else jobs)
        return jobs[index % len(jobs)] if jobs else None

    @rule(fails=st.booleans(), timeout=st.booleans(), catch=st.booleans())
    def enqueue(self, fails, timeout, catch):
        plan = [["step", "s1"], ["sleep", 60], ["step", "s2"]]
        plan.append(["wait", "go", 3600 if timeout else None, catch])
        if fails:
            plan.append(["raise_once", f"fail-{next(_numbers)}"])
        plan.append(["step", "s3"])
        tasks.scripted.enqueue(plan)

    @rule()
    def run_one(self):
        run_ready_jobs(max_jobs=1)

    @rule(index=PICK)
    def wake_one(self, index):
        job = self._pick(index, states.get(states.SCHEDULED).job_condition())
        if job is not None:
            wake(job)

    @rule(index=PICK)
    def time_out(self, index):
        job = self._pick(index, states.get(states.WAITING).job_condition())
        if job is not None:
            expire(job)

    @rule(index=PICK, payload=st.integers())
    def signal(self, index, payload):
        job = self._pick(index)
        if job is None:
            return
        ended = job.finished_at is not None or job.state == states.FAILED
        sent = JobSignal.objects.filter(job_id=job.pk, name="go").exists()
        over = JobStep.objects.filter(job_id=job.pk, kind="wait", completed_at__isnull=False)
        deliverable = not (ended or sent or over.exists())
        try:
            send_signal(job.pk, "go", payload)
        except SignalNotDeliverable:
            assert not deliverable, f"job {job.pk} refused a signal it could take"
        else:
            assert deliverable, f"job {job.pk} took a signal it should refuse"
            self.payloads[job.pk] = payload

    @rule(index=PICK, reset=st.booleans())
    def retry(self, index, reset):
        job = self._pick(index, states.get(states.FAILED).job_condition())
        if job is None:
            return
        if reset:
            self.since_reset[job.pk] = self._runs_and_crashes(job.pk)
        job.retry(reset_steps=reset)

    @rule(index=PICK)
    def cancel(self, index):
        cancellable = states.names_where("cancellable")
        job = self._pick(index)
        if job is not None and job.state in cancellable:
            job.cancel()

    @rule(index=PICK)
    def crash_at_the_next_record(self, index):
        job = self._pick(index)
        if job is not None:
            ARMED.add(job.pk)

    def _runs_and_crashes(self, job_id: int) -> Counter:
        counts = Counter(name for pk, name in tasks.BODIES if pk == job_id)
        counts.subtract({name: n for (pk, name), n in CRASHES.items() if pk == job_id})
        return counts

    @invariant()
    def a_body_runs_again_only_after_a_crash_at_its_record(self):
        recorded = set(JobStep.objects.filter(kind="step").values_list("job_id", "name"))
        for job_id in {pk for pk, _ in tasks.BODIES}:
            counts = self._runs_and_crashes(job_id)
            counts.subtract(self.since_reset.get(job_id, Counter()))
            for name, extra in counts.items():
                assert extra == int((job_id, name) in recorded), (job_id, name, extra)

    @invariant()
    def each_call_is_recorded_once(self):
        twice = JobStep.objects.values("job_id", "kind", "name").annotate(n=Count("pk"))
        assert not twice.filter(n__gt=1).exists()

    @invariant()
    def no_job_waits_for_a_signal_that_came(self):
        for job_id, name in WaitingExecution.objects.exclude(signal_name="").values_list(
            "job_id", "signal_name"
        ):
            assert not JobSignal.objects.filter(job_id=job_id, name=name).exists(), job_id

    @invariant()
    def every_job_is_where_its_calls_say(self):
        assert not ClaimedExecution.objects.exists()
        for job in Job.objects.with_execution():
            rows = [r for r in states.relations() if job._state.fields_cache.get(r) is not None]
            if job.finished_at is not None:
                assert rows == []
                waited = self.payloads.get(job.pk, "timed out")
                assert job.return_value == ["s1-result", "s2-result", waited, "s3-result"]
                continue
            assert len(rows) == 1, (job.pk, rows)


def test_durable_jobs_keep_their_promises():
    pre_save.connect(_killed, sender=JobStep)
    try:
        run_state_machine_as_test(
            DurableJobs,
            settings=settings(
                max_examples=30,
                stateful_step_count=25,
                deadline=None,
                # No shrinking: it can take minutes on a database; the failing steps are printed.
                phases=[Phase.explicit, Phase.reuse, Phase.generate],
            ),
        )
    finally:
        pre_save.disconnect(_killed, sender=JobStep)
