"""Settings of the supervisors the acceptance process tests start: the process tests'
own, plus an app whose tasks module declares recurring tasks."""

import os

from tests.processes.settings import *  # noqa: F403
from tests.processes.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.apps.acceptance_recurring_app"]

if os.environ.get("SQ_QA_FAILING_HOOK"):
    from steady_queue import hooks

    @hooks.on_worker_start
    def failing_hook(worker):
        raise RuntimeError(f"hook failed in {worker.name} {worker.metadata()}")
