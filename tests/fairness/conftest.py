"""Helpers of the fair share tests: claim everything, read who was claimed."""

from __future__ import annotations

import pytest

from steady_queue.backend import enqueue_all
from steady_queue.models import Job
from steady_queue.storage import claim


def claim_all(limit: int = 1, queues=("*",)) -> list[Job]:
    """Claim every ready job, ``limit`` at a time, through the queue database's storage,
    in the order the claims returned them."""
    claimed = []
    while batch := claim(list(queues), limit, None):
        claimed += [execution.job for execution in batch]
    return claimed


def keys(jobs: list[Job]) -> list[str]:
    return [job.fairness_key for job in jobs]


def enqueue_tenant(task, tenant: str, count: int, start: int = 0) -> list:
    """Enqueue ``count`` jobs of ``tenant`` at once (one bulk enqueue)."""
    return enqueue_all([(task, (tenant,), {"n": n}) for n in range(start, start + count)])


@pytest.fixture
def fair(fair_share):
    return fair_share
