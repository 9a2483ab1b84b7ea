"""Steady Queue: a database-backed task backend for Django, after Rails' Solid Queue.

Module-level settings below may be overridden from ``settings.py``::

    import steady_queue
    steady_queue.shutdown_timeout = timedelta(seconds=10)
"""

from __future__ import annotations

from datetime import timedelta

# How often every process records that it is alive.
process_heartbeat_interval: timedelta = timedelta(seconds=60)
# After this long without a heartbeat a process is considered dead and pruned.
process_alive_threshold: timedelta = timedelta(minutes=5)
# How long a graceful stop (TERM/INT) waits for in-flight jobs before QUIT.
shutdown_timeout: timedelta = timedelta(seconds=5)
# Path of the supervisor's pidfile; None disables it.
supervisor_pidfile: str | None = None
# File the supervisor touches at every turn of its loop, for liveness probes; None: none.
# ``manage.py steady_queue --liveness-file PATH`` sets it too.
liveness_file: str | None = None
# How often a process writes the per-task counts and timings it observed (TaskRollup,
# read by steady_queue.metrics and the dashboard's Tasks page); also when it stops.
metrics_flush_interval: timedelta = timedelta(seconds=10)
# Keep finished jobs in the jobs table (needed for results and recurring uniqueness).
preserve_finished_jobs: bool = True
# How long finished jobs are kept by clear_finished_in_batches().
clear_finished_jobs_after: timedelta = timedelta(days=1)
# PostgreSQL: a transaction open longer than this holds back cleanup (VACUUM keeps every
# row deleted since it began, and claims slow down): the health check and the dashboard
# name it (steady_queue.health.horizon). None: not checked.
long_transaction_threshold: timedelta | None = timedelta(minutes=10)
# PostgreSQL: a worker claims the jobs after the last one it claimed first (a scan that
# starts past the dead index entries a long transaction keeps; higher priorities still
# first), and from the head of the queue at least this often: the longest a job that
# becomes ready before that point in its priority (a retry, a released job) waits beyond
# its turn; longer only when a claim from the head is slow (a horizon held for long: 20
# times what it took, up to 30 s) (steady_queue.storage.postgres.claim_cursor). None:
# always from the head; so do claims without a worker process (steady_queue.testing).
claim_rescan_interval: timedelta | None = timedelta(seconds=1)
# Retention rules (steady_queue.retention.Retention): how long jobs that ended are kept,
# by state, queue and task; the dispatchers prune the rest (steady_queue.retention.pruning).
# Without a default rule of its own, "succeeded" keeps clear_finished_jobs_after, and
# failed and cancelled jobs are kept for ever.
retention_rules: list = []
# How often a dispatcher prunes by the rules; None: never (manage.py steady_queue_prune).
prune_interval: timedelta | None = timedelta(minutes=10)
# Rows a pruning batch deletes (each batch its own short transaction), and the pause
# between two batches, which leaves the database to the workers.
prune_batch_size: int = 1000
prune_pause: timedelta = timedelta(milliseconds=50)
# Finished batches and workflow runs are pruned this long after they finished, once
# none of their jobs is left; None: kept for ever.
finished_groups_kept: timedelta | None = timedelta(days=7)
# The hourly rows of the task rollups (the all-time rows are kept for ever).
task_rollups_kept: timedelta | None = timedelta(days=30)
# Archived jobs (steady_queue.models.ArchivedJob); None: kept for ever.
archived_jobs_kept: timedelta | None = None
# The record of what pruning removed (steady_queue.models.PruneTally).
prune_tallies_kept: timedelta = timedelta(days=7)
# PostgreSQL: "day" moves succeeded jobs under the default succeeded rule into a history
# table partitioned by day (steady_queue.retention.history), where retention drops a
# whole day's partition instead of deleting rows. None: they stay in the jobs table and
# are deleted in batches (MariaDB and SQLite always do that: the setting is ignored there).
partition_finished_by: str | None = None
# How long after it finished a job stays in the jobs table before it moves to history:
# results read soon after the end are read from the live table.
history_after: timedelta = timedelta(minutes=5)
# Timeout of the tasks that declare none (@timeout); None: they run as long as they take.
default_timeout: timedelta | None = None
# How long a job that ran past its timeout may keep its thread busy, ignoring the
# interrupt (stuck in C code), before its worker process is recycled.
timeout_grace: timedelta = timedelta(seconds=10)
# How long a running job whose cancellation was asked for may run on without stopping
# (steady_queue.context.cancelled) before it is interrupted like a timeout.
cancel_grace: timedelta = timedelta(seconds=30)
# Default ``duration`` of @limits_concurrency.
default_concurrency_control_period: timedelta = timedelta(minutes=3)
# Database alias holding the queue tables (see steady_queue.routers).
database: str = "default"
# PostgreSQL: the alias whose connection workers and dispatchers LISTEN on for wake-ups.
# None: the queue database's own, unless it disables prepared statements (the mark of
# a transaction-mode pooler such as PgBouncer, where LISTEN misses notifications: then
# processes poll). Behind a pooler, name an alias that connects to PostgreSQL directly.
# False: never listen, always poll.
listen_database: str | bool | None = None
# What a queue embedded in the web server runs (steady_queue.embedded: the ASGI lifespan,
# the Gunicorn hooks, start()): "all" (workers, dispatchers and the scheduler),
# "workers_and_dispatchers" (no scheduler), or "workers" (run the dispatchers and the
# scheduler elsewhere, e.g. ``manage.py steady_queue --only-dispatchers``).
embedded_processes: str = "all"

# A running job's log (docs/reference/job-logs.md): the records its task emits through
# ``logging`` at this level and above are kept with its attempt; None: none are.
job_log_level: int | None = 20  # logging.INFO
# Whether what the task prints (sys.stdout, sys.stderr) is kept too.
job_log_print: bool = False
# Per attempt, the newest lines kept: older ones are deleted (a marker says how many).
job_log_max_lines: int = 1000
job_log_max_bytes: int = 256 * 1024
# How often a worker writes the lines its running jobs logged (and at each job's end).
job_log_flush_interval: timedelta = timedelta(seconds=1)
# Labels (steady_queue.labels) that a job's log records carry, chosen by prefix: with
# ["tenant:"], a job labelled "tenant:7" logs ``labels=["tenant:7"]``. Empty: log records
# carry no labels. Metrics never carry labels (their values are unbounded).
log_label_prefixes: list[str] = []

# The public API, importable from the package itself (``from steady_queue import
# recurring``) and loaded on first use (PEP 562): importing ``steady_queue`` in
# settings.py must not import models before Django's app registry is ready.
_PUBLIC = {
    "Configuration": "steady_queue.configuration",
    "RetryPolicy": "steady_queue.task_options.retries",
    "retry_policy": "steady_queue.task_options.retries",
    "limits_concurrency": "steady_queue.task_options.concurrency",
    "unique": "steady_queue.task_options.uniqueness",
    "Unique": "steady_queue.task_options.uniqueness",
    "recurring": "steady_queue.task_options.recurring_task",
    "report_progress": "steady_queue.context",
    "reschedule": "steady_queue.context",
    "set_metadata": "steady_queue.context",
    "run_ready_jobs": "steady_queue.testing",
    "dispatch_scheduled": "steady_queue.testing",
    "enqueue_all": "steady_queue.backend",
    "wait": "steady_queue.waiting",
    "await_result": "steady_queue.waiting",
    "SteadyQueueBackend": "steady_queue.backend",
    "DeserializationError": "steady_queue.arguments",
    "SerializationError": "steady_queue.arguments",
    "JobStateError": "steady_queue.exceptions",
    "ProcessExitError": "steady_queue.exceptions",
    "ProcessPrunedError": "steady_queue.exceptions",
    "UniqueKeyError": "steady_queue.exceptions",
}


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'steady_queue' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])


from . import _moved  # noqa: E402

_moved.install()
