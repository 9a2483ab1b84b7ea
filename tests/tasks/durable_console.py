"""Durable tasks the console's tests run: one that waits for a signal after two steps (a
secret in a step's result), one that sleeps, one that waits with no deadline."""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.durable import sleep, step, wait_for_signal
from steady_queue_dashboard.masking import masked_arguments


@masked_arguments("pin")
@task(takes_context=True)
def onboard(context, user_id, pin="0000"):
    account = step(context, "create-account", lambda: {"id": user_id, "password": "hunter2"})
    step(context, "welcome-mail", lambda: {"sent_to": f"user{user_id}@example.com", "pin": pin})
    answer = wait_for_signal(context, "confirmed", timeout=timedelta(days=7))
    return step(context, "activate", lambda: {"account": account["id"], "answer": answer})


@task(takes_context=True)
def nap(context, hours=2):
    step(context, "before", lambda: 1)
    sleep(context, timedelta(hours=hours))
    return step(context, "after", lambda: 2)


@task(takes_context=True)
def patient(context):
    return wait_for_signal(context, "go")
