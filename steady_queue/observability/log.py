"""The fields of a log record about a job, and the logger of each job's start and end.

Every record about a job carries the job's fields as ``extra`` attributes (see
``job_fields``), so that a JSON formatter (python-json-logger, structlog) emits them
as fields: ``job_id``, ``task_path``, ``queue_name``, ``attempt``, ``process_name``
(the worker) and, once a run has ended, ``duration_ms``. (``process`` itself is the
LogRecord's pid.) With ``steady_queue.log_label_prefixes`` set, ``labels`` too: the
job's labels that start with one of the prefixes (none by default: labels such as a
tenant's id have no bound on their number of values). The models, the storage and the
processes log with these fields;
the receivers that write a line as each job starts and ends live with the TaskResults
they read, in ``results``: this module imports nothing of the engine's.
"""

from __future__ import annotations

import logging
from typing import Any

import steady_queue

#: The logger of the lines about each job's start and end.
logger = logging.getLogger("steady_queue.jobs")


def job_fields(job, **more: Any) -> dict[str, Any]:
    """The ``extra`` of a log record about ``job`` (a Job, or a TaskResult of one)."""
    if hasattr(job, "task"):  # a TaskResult: its attempts name the workers
        fields = {
            "job_id": str(job.id),
            "task_path": job.task.module_path,
            "queue_name": job.task.queue_name,
            "attempt": len(job.worker_ids),
            "process_name": job.worker_ids[-1] if job.worker_ids else None,
        }
    else:
        fields = {
            "job_id": str(job.pk),
            "task_path": job.task_path,
            "queue_name": job.queue_name,
            "attempt": len(job.attempts) + 1,
        }
    # A TaskResult has no labels: its caller gives them (results._logged_labels).
    if steady_queue.log_label_prefixes and not hasattr(job, "task"):
        fields["labels"] = logged_labels(job.labels)
    return {**fields, **more}


def logged_labels(labels: list[str]) -> list[str]:
    """The labels of a job that its log records carry (``log_label_prefixes``)."""
    prefixes = tuple(steady_queue.log_label_prefixes)
    return [label for label in labels if label.startswith(prefixes)]


def claim_fields(claimed, **more: Any) -> dict[str, Any]:
    """``job_fields`` of a claim's job, without a query: safe while the database is down.

    Logging runs in error paths (an outage, a failed record) where a lazy load of the
    job would raise out of the handler and skip what it does next.
    """
    job = claimed._state.fields_cache.get("job")
    if job is None:
        return {"job_id": str(claimed.job_id), **more}
    return job_fields(job, **more)
