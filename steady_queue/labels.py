"""Labels of jobs: ``labels(...)``, a task's static labels (a decorator above
``@task()``) and the labels of every enqueue in a ``with`` block. See
``steady_queue.task_options.labels``, which holds them, and docs/how-to/label-jobs.md.
"""

from .exceptions import InvalidLabels
from .task_options.labels import (
    MAX_LABELS,
    MAX_LENGTH,
    active_labels,
    labels,
    labels_for,
    static_labels,
)

__all__ = [
    "MAX_LABELS",
    "MAX_LENGTH",
    "InvalidLabels",
    "active_labels",
    "labels",
    "labels_for",
    "static_labels",
]
