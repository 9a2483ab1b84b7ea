"""The tasks of bench/durable.py: the same work as plain calls and as durable steps."""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.durable import sleep, step


def work(n: int) -> dict:
    return {"n": n, "ok": True}  # a small JSON value, as a step's result would be


@task(takes_context=True)
def plain(context, steps: int) -> int:
    for n in range(steps):
        work(n)
    return steps


@task(takes_context=True)
def stepped(context, steps: int) -> int:
    for n in range(steps):
        step(context, f"s{n}", lambda n=n: work(n))
    return steps


@task(takes_context=True)
def stepped_then_nap(context, steps: int) -> int:
    """Its steps, a sleep (the run ends), then on its next run the same steps replayed."""
    for n in range(steps):
        step(context, f"s{n}", lambda n=n: work(n))
    sleep(context, timedelta(days=1))
    return steps


@task(takes_context=True)
def sleeper(context) -> None:
    """One step, then a sleep of a day: the backlog of sleeping jobs."""
    step(context, "begin", lambda: work(0))
    sleep(context, timedelta(days=1))
