"""Configurations of the fault suite's supervisors."""

from steady_queue.configuration import Configuration

# Two worker processes, so that one can be killed while the other keeps running jobs.
# Concurrency maintenance stays at its 10-minute default: a stranded key must be
# recovered by the engine's crash path, not by maintenance, within a test's deadline.
FAULTS = Configuration.Options(
    workers=[Configuration.Worker(queues=["*"], threads=3, processes=2, polling_interval=0.05)],
    dispatchers=[Configuration.Dispatcher(polling_interval=0.1)],
)
# One thread per worker: a worker that loses its only thread runs nothing more.
ONE_THREAD = Configuration.Options(
    workers=[Configuration.Worker(queues=["*"], threads=1, processes=2, polling_interval=0.05)],
    dispatchers=[Configuration.Dispatcher(polling_interval=0.1)],
)
