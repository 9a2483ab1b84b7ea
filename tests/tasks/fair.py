"""Tasks declared ``@fair`` for the fair share tests (tests/fairness/, tests/property/).

Importing this module registers them in ``task_options.fairness``; the suite's tests run
with that registry emptied (tests/conftest.py) unless they ask for ``fair_share``, so
that jobs of other tests keep the FIFO path.
"""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.fairness import Fairness, fair
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.rate_limits import rate_limit
from tests.tasks.features import TASK_TAKES_OPTIONS

#: Weights by tenant for ``weighted``; any other tenant weighs 1.
WEIGHTS = {"light": 1, "middle": 2, "heavy": 4}


def _weight_of(key: str) -> int:
    if key == "broken":
        raise RuntimeError("no weight for you")
    return WEIGHTS.get(key, 1)


@fair(key=lambda tenant, n=0: tenant)
@task()
def by_tenant(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda tenant, n=0: tenant, weight=_weight_of)
@task()
def weighted(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda tenant, n=0: tenant)
@task(priority=5)
def urgent(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda tenant, n=0: tenant)
@task(queue_name="other")
def elsewhere(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda account: account)
@task()
def per_account(account) -> None:
    return None


@fair(key=lambda tenant, n=0: 1 / 0 if tenant == "bad" else tenant)
@task()
def key_may_fail(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda tenant, n=0: tenant)
@limits_concurrency(to=1, key=lambda tenant, n=0: tenant)
@task()
def one_at_a_time(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda tenant, n=0: tenant)
@rate_limit(to=1, per=timedelta(minutes=1))
@task()
def rate_limited(tenant: str, n: int = 0) -> int:
    return n


@fair(key=lambda tenant, n=0: tenant)
@task()
def fails(tenant: str, n: int = 0) -> int:
    raise ValueError(f"job {n} of {tenant} fails")


@task()
def plain(n: int = 0) -> int:
    return n


if TASK_TAKES_OPTIONS:

    @task(fairness=Fairness(key=lambda tenant, n=0: tenant, weight=3))
    def declared_in_task(tenant: str, n: int = 0) -> int:
        return n


@fair(key=lambda tenant, log_path, label: tenant)
@task()
def stamped(tenant: str, log_path: str, label: str) -> str:
    """Record when the run started (as the task sees it), then work for 20 ms."""
    import time

    from tests.tasks.processes import append

    append(log_path, f"start {tenant}-{label} {time.time()!r}")
    time.sleep(0.02)
    return label
