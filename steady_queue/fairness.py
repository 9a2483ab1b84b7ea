"""Fair share between tenants: one key's flood never starves another key's jobs.

    from steady_queue.fairness import fair, Fairness

    @fair(key=lambda account_id, **kw: account_id, weight=1)
    @task()          # or, on Django 6.1+, @task(fairness=Fairness(key=..., weight=...))
    def sync_account(account_id): ...

Within one queue and one priority, ready jobs of fair tasks are claimed round-robin
across their keys, in proportion to the keys' weights; within a key, in enqueue order.
Priorities come first. Jobs of tasks without ``@fair`` share the queue as one more key.
``set_weight`` / ``clear_weight`` change a key's weight at run time, for the jobs
already ready too (audited). Each call acts on the queue database of the current
backend (``steady_queue.database``, or the one ``db.using_alias`` chose). How it works:
ARCHITECTURE.md, "Fair share".
"""

from .exceptions import FairnessKeyError
from .ops.fair_share import clear_weight, set_weight
from .task_options.fairness import Fairness, fair, in_use

__all__ = ["Fairness", "FairnessKeyError", "clear_weight", "fair", "in_use", "set_weight"]
