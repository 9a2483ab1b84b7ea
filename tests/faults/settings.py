"""Settings of the fault suite's ``manage.py steady_queue``: the process tests' settings
plus ``task_started`` receivers: one raises for one task; one records when the engine
began each run and waits ``SQ_FAULTS_SLOW_START`` seconds, as a slow tracing hook
would, which widens the moment between a claim and the task's own start."""

import os
import time

from steady_queue.compat import task_started
from tests.processes.settings import *  # noqa: F403

RAISING_RECEIVER_TASK = "tests.tasks.faults.behind_a_raising_receiver"


def _raise_for_one_task(sender, task_result, **kwargs) -> None:
    if task_result.task.module_path == RAISING_RECEIVER_TASK:
        raise RuntimeError("task_started receiver failed")


task_started.connect(_raise_for_one_task, weak=False)


def _slow_start(sender, task_result, **kwargs) -> None:
    began_at = time.time()  # first: the moment the engine started the run
    # Imported here: declaring tasks while the settings load would build the task
    # backends from Django's default TASKS.
    from tests.tasks.faults import record

    # The moment the engine started the run, for the checks of frozen workers.
    record(task_result.args[0], "begin", at=began_at)
    time.sleep(float(os.environ.get("SQ_FAULTS_SLOW_START", "0")))


task_started.connect(_slow_start, weak=False)
