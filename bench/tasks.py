"""No-op tasks, one per backend under test."""

from steady_queue.compat import task


@task()
def noop():
    return None


@task(backend="dtdb")
def noop_dtdb():
    return None
