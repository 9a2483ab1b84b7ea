"""Fair tasks for the fair share's console, metric and command tests."""

from __future__ import annotations

from steady_queue.compat import task
from steady_queue.fairness import fair

#: Declared weights of ``weighted``'s keys (others weigh 1).
WEIGHTS = {"gold": 4, "silver": 2}


@fair(key=lambda tenant, n=0: tenant)
@task()
def tenant_job(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda tenant, n=0: tenant, weight=lambda key: WEIGHTS.get(key, 1))
@task(queue_name="beta_one")
def weighted(tenant: str, n: int = 0) -> int:
    return n
