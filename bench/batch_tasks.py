"""Tasks of bench/batches.py: a batch's callback, and the steps of a fan-out workflow."""

from steady_queue.compat import task


@task()
def batch_done(batch_id: int) -> int:
    return batch_id


@task()
def part(n: int) -> int:
    return n
