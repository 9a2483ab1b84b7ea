"""Tasks the dashboard tests enqueue: quick ones, failing ones, limited ones, rate limited
ones, slow ones."""

from __future__ import annotations

import time
from datetime import timedelta

from steady_queue.compat import task
from steady_queue.context import report_progress
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.rate_limits import rate_limit


@task()
def record(*args, **kwargs):
    return {"args": list(args), "kwargs": kwargs}


@task()
def fail(message="boom"):
    raise RuntimeError(message)


@task()
def fail_once(marker_path):
    """Fail on the first run, succeed when retried (the marker file remembers)."""
    import pathlib

    marker = pathlib.Path(marker_path)
    if not marker.exists():
        marker.write_text("failed once")
        raise RuntimeError("first run fails")
    return "succeeded on retry"


@limits_concurrency(key=lambda account_id: account_id, to=1)
@task()
def limited(account_id):
    return account_id


@rate_limit(to=2, per=timedelta(minutes=1), key=lambda account_id: f"account-{account_id}")
@task()
def call_partner(account_id):
    return account_id


@rate_limit(to=1, per=timedelta(hours=1))
@task()
def export_all(n):
    return n


@task(takes_context=True)
def crawl(context, steps=5, pause=0.5):
    """Report progress step by step, slowly enough to be watched."""
    for step in range(1, steps + 1):
        time.sleep(pause)
        report_progress(context, step, steps, f"page {step}")
    return steps
