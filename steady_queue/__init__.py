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
# Keep finished jobs in the jobs table (needed for results and recurring uniqueness).
preserve_finished_jobs: bool = True
# How long finished jobs are kept by clear_finished_in_batches().
clear_finished_jobs_after: timedelta = timedelta(days=1)
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
