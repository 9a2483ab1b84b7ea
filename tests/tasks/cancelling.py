"""Tasks of the cancellation tests: they cancel themselves, or wait to be cancelled."""

from __future__ import annotations

import time
from datetime import timedelta

from steady_queue.compat import task
from steady_queue.context import cancelled, report_progress, reschedule
from steady_queue.models import Job
from steady_queue.task_options.retries import retry_policy

WAIT_LIMIT = 60.0


def _cancel_me(context) -> None:
    Job.objects.get(pk=int(context.task_result.id)).cancel()


@task(takes_context=True)
def notices_and_returns(context) -> str:
    _cancel_me(context)
    return "stopped" if cancelled(context) else "never told"


@task(takes_context=True)
def reports_progress(context) -> None:
    _cancel_me(context)
    report_progress(context, 1, 2)  # raises JobCancelled


@retry_policy(attempts=5, base_delay=timedelta(0))
@task(takes_context=True)
def raises_after_cancel(context) -> None:
    _cancel_me(context)
    raise ValueError("interrupted half-way")


@task(takes_context=True)
def reschedules_after_cancel(context) -> None:
    _cancel_me(context)
    reschedule(context, timedelta(minutes=5))


@task(takes_context=True)
def never_looks(context) -> str:
    _cancel_me(context)
    return "done"


@task(takes_context=True)
def waits_to_be_cancelled(context) -> str:
    """Loop until cancelled (or a minute, so that no stray process lingers)."""
    deadline = time.monotonic() + WAIT_LIMIT
    while not cancelled(context) and time.monotonic() < deadline:
        time.sleep(0.02)
    return "stopped"


@task()
def ignores_cancellation() -> str:
    """Never looks: only the interrupt after cancel_grace stops it."""
    deadline = time.monotonic() + WAIT_LIMIT
    while time.monotonic() < deadline:
        time.sleep(0.02)
    return "finished anyway"
