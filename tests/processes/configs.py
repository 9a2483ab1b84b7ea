"""Configurations the process tests start ``manage.py steady_queue --config`` with."""

from steady_queue.configuration import Configuration

FAST = Configuration.Options(
    dispatchers=[Configuration.Dispatcher(polling_interval=0.1)],
    workers=[Configuration.Worker(queues=["*"], threads=3, polling_interval=0.05)],
)
WORKER = Configuration.Options(
    dispatchers=[],
    workers=[Configuration.Worker(queues=["*"], threads=2, polling_interval=0.05)],
)
ONE_THREAD = Configuration.Options(
    dispatchers=[],
    workers=[Configuration.Worker(queues=["*"], threads=1, polling_interval=0.05)],
)
QUEUE_ORDER = Configuration.Options(
    dispatchers=[],
    workers=[
        Configuration.Worker(queues=["real_time", "background"], threads=1, polling_interval=0.05)
    ],
)
SCALE = Configuration.Options(
    dispatchers=[],
    workers=[Configuration.Worker(queues=["*"], threads=4, processes=2, polling_interval=0.05)],
)
# Two workers with a queue each: what one leaves ready waits for it (or its replacement).
TWO_QUEUES = Configuration.Options(
    dispatchers=[],
    workers=[
        Configuration.Worker(queues=["low"], threads=2, polling_interval=0.05),
        Configuration.Worker(queues=["other"], threads=2, polling_interval=0.05),
    ],
)

# Polls ten seconds apart: a job that starts sooner was woken by a notification.
SLOW_POLLING = Configuration.Options(
    dispatchers=[Configuration.Dispatcher(polling_interval=10)],
    workers=[Configuration.Worker(queues=["*"], threads=2, polling_interval=10)],
)

# Recycled after 10 jobs (two processes of two threads), or after each job (1 MiB).
RECYCLE_AFTER_JOBS = Configuration.Options(
    dispatchers=[],
    workers=[
        Configuration.Worker(
            queues=["*"], threads=2, processes=2, polling_interval=0.05, recycle_after_jobs=10
        )
    ],
)
RECYCLE_ABOVE_MEMORY = Configuration.Options(
    dispatchers=[],
    workers=[
        Configuration.Worker(queues=["*"], threads=1, polling_interval=0.05, recycle_above_memory=1)
    ],
)
# Two worker processes of three threads and a dispatcher (default polling): the rate
# limit tests start two of these supervisors.
RATE_LIMITED = Configuration.Options(
    dispatchers=[Configuration.Dispatcher()],
    workers=[Configuration.Worker(queues=["*"], threads=3, processes=2, polling_interval=0.1)],
)
# Batches and workflows: two worker processes of three threads, and a dispatcher for the
# retries (scheduled, even without a delay).
GROUPS = Configuration.Options(
    dispatchers=[Configuration.Dispatcher(polling_interval=0.1)],
    workers=[Configuration.Worker(queues=["*"], threads=3, processes=2, polling_interval=0.05)],
)

# A worker polling every two seconds, nothing else: what picks a job up sooner is the
# change signal (SQLite), NOTIFY (PostgreSQL), or polling that tightens after activity.
IDLE_WORKER = Configuration.Options(
    dispatchers=[],
    workers=[Configuration.Worker(queues=["*"], threads=2, polling_interval=2)],
)

# One worker process: two threads, and a thousand async jobs at once on its event loop.
ASYNC = Configuration.Options(
    dispatchers=[],
    workers=[
        Configuration.Worker(queues=["*"], threads=2, polling_interval=0.05, async_concurrency=1000)
    ],
)

# Four worker processes of two threads and a quick dispatcher (the retries of killed and
# failed runs come back through it): tests/processes/test_transactional.py.
FOUR_WORKERS = Configuration.Options(
    dispatchers=[Configuration.Dispatcher(polling_interval=0.1)],
    workers=[Configuration.Worker(queues=["*"], threads=2, processes=4, polling_interval=0.05)],
)

# Two worker processes of three threads and a quick dispatcher (sleeps coming due, retries
# of killed runs): tests/processes/test_durable_kills.py.
DURABLE = Configuration.Options(
    dispatchers=[Configuration.Dispatcher(polling_interval=0.1)],
    workers=[Configuration.Worker(queues=["*"], threads=3, processes=2, polling_interval=0.05)],
)
