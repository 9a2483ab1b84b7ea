"""Retention: how long jobs that ended are kept, by state, queue and task, and the
pruning that applies it (``steady_queue.retention.pruning``).

``from steady_queue.retention import Retention`` is safe in settings.py: this package
loads no model until pruning runs (Django's app registry is not ready there).
"""

from .rules import Retention, effective_rules, problems

__all__ = ["Retention", "effective_rules", "problems"]
