"""Fair share as properties (docs: "Fair share"), over random tenants, weights and
interleavings of enqueues and claims, by one and several claimers:

- every job is claimed exactly once;
- no key with ready jobs waits more than one weighted round: between two claims of a
  key ``k`` while ``k`` has ready jobs (or from the moment its jobs become ready to its
  first claim), any other key ``j`` is claimed at most ``ceil(w_j / w_k) + 1`` times.

A claim of several jobs takes them in the poll order; the sequence checked is that
order (each batch sorted by its rows' tags, read just before the claim). The last phase
drains what is left with several threads claiming at once: exactly once, still.
"""

from __future__ import annotations

import math
import os
import threading
from collections import Counter, defaultdict

import pytest
from django.db import connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.fairness import set_weight
from steady_queue.models import ClaimedExecution, FairWeight, Job, Process, ReadyExecution

pytestmark = pytest.mark.django_db(transaction=True)

TENANTS = ["t0", "t1", "t2", "t3"]

enqueue = st.tuples(st.just("enqueue"), st.sampled_from(TENANTS), st.integers(1, 6))
claim = st.tuples(st.just("claim"), st.integers(0, 2), st.integers(1, 3))  # claimer, limit
operations = st.lists(st.one_of(enqueue, claim), min_size=1, max_size=25)
weights = st.fixed_dictionaries({tenant: st.integers(1, 4) for tenant in TENANTS})


class Ledger:
    """Ready jobs per key as the test sees them, and the claims since each key's last."""

    def __init__(self, weight_of: dict[str, int]):
        self.weight_of = weight_of
        self.ready: Counter[str] = Counter()
        self.since: dict[str, Counter[str]] = defaultdict(Counter)

    def enqueued(self, key: str, count: int) -> None:
        if not self.ready[key]:
            self.since[key] = Counter()  # its wait starts now
        self.ready[key] += count

    def claimed(self, key: str) -> None:
        for waiting in [k for k, n in self.ready.items() if n and k != key]:
            self.since[waiting][key] += 1
            bound = math.ceil(self.weight_of[key] / self.weight_of[waiting]) + 1
            assert self.since[waiting][key] <= bound, (
                f"{waiting} (weight {self.weight_of[waiting]}) waited through "
                f"{self.since[waiting][key]} claims of {key} (weight {self.weight_of[key]})"
            )
        self.since[key] = Counter()
        self.ready[key] -= 1


@pytest.fixture
def claimers() -> list[Process]:
    return [
        Process.register(kind=Process.Kind.WORKER, name=f"claimer-{n}", pid=os.getpid())
        for n in range(3)
    ]


@settings(
    max_examples=int(os.environ.get("SQ_FAIR_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(weight_of=weights, script=operations, drainers=st.integers(1, 3))
def test_every_job_is_claimed_once_and_no_key_waits_more_than_a_round(
    fair_share, claimers, weight_of, script, drainers
):
    Job.objects.all().delete()
    FairWeight.objects.all().delete()
    for tenant, weight in weight_of.items():
        set_weight(tenant, weight, task=fair_share.by_tenant)
    ledger, enqueued, claimed = Ledger(weight_of), [], []

    for op, *args in script:
        if op == "enqueue":
            tenant, count = args
            calls = [(fair_share.by_tenant, (tenant,), {"n": n}) for n in range(count)]
            enqueued += [int(result.id) for result in enqueue_all(calls)]
            ledger.enqueued(tenant, count)
        else:
            claimer, limit = args
            for job in claim_in_poll_order(claimers[claimer], limit):
                claimed.append(job.pk)
                ledger.claimed(job.fairness_key)

    claimed += drain(claimers[:drainers])

    assert sorted(claimed) == sorted(enqueued)  # each once: no job twice, none left
    assert ClaimedExecution.objects.count() == len(enqueued)
    assert not ReadyExecution.objects.exists()


def claim_in_poll_order(process: Process, limit: int) -> list[Job]:
    tags = dict(ReadyExecution.objects.values_list("job_id", "fair_order"))
    batch = [execution.job for execution in storage.claim(["*"], limit, process)]
    return sorted(batch, key=lambda job: (tags[job.pk], job.pk))


def drain(processes: list[Process]) -> list[int]:
    """Claim everything left with one thread per process, all at once."""
    taken: list[list[int]] = [[] for _ in processes]
    errors: list[BaseException] = []
    start = threading.Barrier(len(processes))

    def run(index: int, process: Process) -> None:
        try:
            start.wait()
            while batch := storage.claim(["*"], 2, process):
                taken[index] += [execution.job_id for execution in batch]
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=pair) for pair in enumerate(processes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return [job_id for ids in taken for job_id in ids]
