"""Configurations the health checks are told the supervisors run (``--config``)."""

from steady_queue.configuration import Configuration

TWO_QUEUES = Configuration.Options(
    dispatchers=[Configuration.Dispatcher()],
    workers=[Configuration.Worker(queues=["real_time", "background"])],
)
WORKERS_ONLY = Configuration.Options(dispatchers=[], workers=[Configuration.Worker(queues=["*"])])
