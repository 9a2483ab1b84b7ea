"""Tasks used by the test suite; they record what they saw in CALLS."""

from __future__ import annotations

from steady_queue.compat import task
from steady_queue.task_options.concurrency import limits_concurrency

CALLS: list[tuple] = []


@task()
def noop():
    return None


@task()
def add(a, b):
    return a + b


@task(priority=10, queue_name="real_time")
def greet(name, times=1):
    return f"Hello, {name}" * times


@task()
def echo(*args, **kwargs):
    CALLS.append((args, kwargs))
    return {"args": len(args), "kwargs": sorted(kwargs)}


@task()
def explode(message="boom"):
    raise ValueError(message)


@task()
async def async_add(a, b):
    return a + b


@task(takes_context=True)
def with_context(context, value):
    return {"attempt": context.attempt, "id": context.task_result.id, "value": value}


@task()
def returns_set():
    return {1, 2}


@task(backend="secondary")
def on_secondary():
    return "secondary"


@limits_concurrency(key=lambda key: key, to=1)
@task()
def limited(key):
    return key


@task()
def enqueue_child(value):
    add.enqueue(value, 1)
    return value


@task()
def returns_tuple():
    return (1, "two", [3])
