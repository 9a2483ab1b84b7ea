"""Configurations the wake-up tests start ``manage.py steady_queue --config`` with."""

from steady_queue.configuration import Configuration

# Polls ten seconds apart: a job that starts sooner was woken by a notification.
SLOW_POLLING = Configuration.Options(
    dispatchers=[Configuration.Dispatcher(polling_interval=10)],
    workers=[Configuration.Worker(queues=["*"], threads=2, polling_interval=10)],
)
