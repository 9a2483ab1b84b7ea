"""The process tests' settings plus a ``task_started`` receiver that cuts the database
connection of the thread starting a run, as a database restart would, for the tasks
named in ``SQ_CUT_CONNECTION_FOR`` (comma-separated module paths)."""

import os

from steady_queue.compat import task_started
from tests.processes.settings import *  # noqa: F403


def _cut_connection(sender, task_result, **kwargs) -> None:
    from django.db import connection

    from tests.tasks.processes import cut_own_connection

    if task_result.task.module_path in os.environ.get("SQ_CUT_CONNECTION_FOR", "").split(","):
        cut_own_connection(connection)


task_started.connect(_cut_connection, weak=False)
