"""Configurations the acceptance process tests pass to ``manage.py steady_queue --config``."""

from datetime import timedelta

from steady_queue.configuration import Configuration

QUICK = Configuration.Options(
    workers=[Configuration.Worker(queues=["*"], threads=2, polling_interval=0.05)],
    dispatchers=[
        Configuration.Dispatcher(
            polling_interval=timedelta(milliseconds=100), concurrency_maintenance=False
        )
    ],
)

QUEUE_ORDER = Configuration.Options(
    workers=[
        Configuration.Worker(
            queues=["real_time", "beta*", "default"], threads=1, polling_interval=0.05
        )
    ],
    dispatchers=[],
)

TWO_KINDS = Configuration.Options(
    workers=[
        Configuration.Worker(queues=["real_time"], threads=1, polling_interval=0.05),
        Configuration.Worker(
            queues=["default", "low"], threads=2, processes=2, polling_interval=0.05
        ),
    ],
    dispatchers=[Configuration.Dispatcher(polling_interval=0.1)],
)

MAINTENANCE = Configuration.Options(
    workers=[],
    dispatchers=[
        Configuration.Dispatcher(polling_interval=0.1, concurrency_maintenance_interval=0.2)
    ],
)

SLOW_POLLING = Configuration.Options(
    workers=[Configuration.Worker(queues=["*"], threads=1, polling_interval=30)],
    dispatchers=[Configuration.Dispatcher(polling_interval=30, concurrency_maintenance=False)],
)
