"""The tasks of bench/noisy_neighbour.py: one job of a tenant, with and without ``@fair``.

Each returns when its work began and ended (``time.time()``), so that pickup latency
(began - enqueued) and the drain's span are read back from the jobs themselves.
"""

from __future__ import annotations

import time

from steady_queue.compat import task
from steady_queue.fairness import fair

#: The saturation run's weights: X, Y and Z should share the workers 1:2:4.
WEIGHTS = {"X": 1, "Y": 2, "Z": 4}


def _work(seconds: float) -> list[float]:
    began = time.time()
    if seconds:
        time.sleep(seconds)
    return [began, time.time()]


@task()
def plain(tenant: str, seconds: float) -> list[float]:
    """A tenant's job on the FIFO path (no ``@fair``)."""
    return _work(seconds)


@fair(key=lambda tenant, seconds: tenant)
@task()
def shared(tenant: str, seconds: float) -> list[float]:
    """The same job of a fair task: one key per tenant, weight 1."""
    return _work(seconds)


@fair(key=lambda tenant, seconds: tenant, weight=lambda key: WEIGHTS.get(key, 1))
@task()
def weighted(tenant: str, seconds: float) -> list[float]:
    """A fair task whose tenants weigh ``WEIGHTS``."""
    return _work(seconds)
