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
What is recorded lives in ``models.durable`` (``JobStep``, ``JobSignal``); README's
"Durable tasks" says the exact guarantees.
"""

from .runner.durable_calls import send_signal, sleep, step, wait_for_signal

__all__ = ["send_signal", "sleep", "step", "wait_for_signal"]
