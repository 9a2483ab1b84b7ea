"""The durable task the process tests run under SIGKILL (tests/processes/test_durable_kills.py).

A journey takes five steps, sleeps before the third and waits for the signal ``go``
before the fifth. Each step's body appends ``ran <label>/<step> <pid>`` to the run log
as it returns, and the task appends ``kept <label>/<step> <pid>`` once ``step`` returned
(the step's record exists then): a body that ran again must have lost the run that
ran it before between those two lines.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

from steady_queue.compat import task
from steady_queue.durable import sleep, step, wait_for_signal
from steady_queue.task_options.retries import retry_policy
from tests.tasks.processes import append

STEPS = 5
BODY_SECONDS = 0.02


# A killed run is a failed attempt (ProcessExitError): run again from the top, its steps
# skipped, as many times as the kills need.
@retry_policy(attempts=50, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task(takes_context=True)
def journey(context, log_path: str, label: str, nap: float) -> list:
    out = []
    for n in range(STEPS):
        if n == 2:
            sleep(context, timedelta(seconds=nap))
        if n == 4:
            out.append(wait_for_signal(context, "go"))
        name = f"s{n}"
        out.append(step(context, name, lambda name=name: _body(log_path, label, name)))
        append(log_path, f"kept {label}/{name} {os.getpid()}")
    return out


def _body(log_path: str, label: str, name: str) -> str:
    # A body takes a little time, so that a kill finds workers busy on a fast machine.
    time.sleep(BODY_SECONDS)
    append(log_path, f"ran {label}/{name} {os.getpid()}")
    return f"{label}/{name}"
