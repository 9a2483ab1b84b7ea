"""Durable execution: steps that survive retries, sleeps that hold no worker, signals.

from steady_queue.durable import send_signal, sleep, step, wait_for_signal

@task(takes_context=True)
def onboard(context, user_id):
    account = step(context, "create-account", lambda: create_account(user_id))
    step(context, "welcome-mail", lambda: send_welcome(account))
    sleep(context, timedelta(days=2))             # the run ends; no worker holds the job
    answer = wait_for_signal(context, "confirmed", timeout=timedelta(days=7))
    step(context, "activate", lambda: activate(account, answer))

send_signal(result_or_job_id, "confirmed", {"by": "email"})

A durable task is run again from the top after each sleep and wait: the steps already
recorded return their stored values without running, the sleeps and waits already
passed return at once, and execution goes on from the first call not recorded yet.
README's "Durable tasks" says the exact guarantees.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from .compat import TaskContext, TaskResult


__all__ = ["send_signal", "sleep", "step", "wait_for_signal"]


def step[T](context: TaskContext, name: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` once for this job and return its value; later runs return the stored value."""
    raise NotImplementedError


def sleep(context: TaskContext, delay: timedelta) -> None:
    """End this run and resume the job after ``delay`` (0 or negative: go on at once)."""
    raise NotImplementedError


def wait_for_signal(context: TaskContext, name: str, timeout: timedelta | None = None) -> Any:
    """The payload of the signal ``name``; ends the run until it is sent (or SignalTimeout)."""
    raise NotImplementedError


def send_signal(result_or_job_id: TaskResult | int | str, name: str, payload: Any = None) -> None:
    """Send the signal ``name`` with ``payload`` (JSON, at most 64 KB) to a job."""
    raise NotImplementedError
