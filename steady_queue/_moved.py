"""Old import paths of modules that moved, kept working: one table, one import hook.

``import steady_queue.queue`` returns ``steady_queue.models.queue`` itself (the same
module object, not a copy), so ``from steady_queue.queue import Queue`` and
monkeypatching through the old name keep working. Installed by ``steady_queue``'s
``__init__``; a module that exists at its old path is never intercepted.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec, PathFinder

#: old dotted path -> where the module lives now.
MOVED = {
    "steady_queue.queue": "steady_queue.models.queue",
    "steady_queue.queue_selector": "steady_queue.models.queue_selector",
    "steady_queue.recurring_schedule": "steady_queue.processes.recurring_schedule",
    "steady_queue.recurring_checks": "steady_queue.checks.recurring",
    "steady_queue.checks_queues": "steady_queue.checks.queues",
    "steady_queue.cron_times": "steady_queue.task_options.recurring_task",
    "steady_queue.schedule_description": "steady_queue.task_options.recurring_task",
    "steady_queue.process_errors": "steady_queue.exceptions",
    "steady_queue.postgres": "steady_queue.storage.postgres",
    "steady_queue.postgres_enqueue": "steady_queue.storage.postgres.enqueue",
    "steady_queue.notify": "steady_queue.storage.notify",
    "steady_queue.concurrency": "steady_queue.task_options.concurrency",
    "steady_queue.rate_limits": "steady_queue.task_options.rate_limits",
    "steady_queue.retries": "steady_queue.task_options.retries",
    "steady_queue.timeouts": "steady_queue.task_options.timeouts",
    "steady_queue.uniqueness": "steady_queue.task_options.uniqueness",
    "steady_queue.log": "steady_queue.observability.log",
    "steady_queue.tracing": "steady_queue.observability.tracing",
    "steady_queue.processes.pool": "steady_queue.processes.worker.pool",
    "steady_queue.processes.recycling": "steady_queue.processes.worker.recycling",
    "steady_queue.processes.async_slots": "steady_queue.processes.worker.async_slots",
    "steady_queue.processes.async_claims": "steady_queue.processes.worker.async_claims",
    "steady_queue.processes.run_checks": "steady_queue.processes.worker.run_checks",
    "steady_queue.processes.unrecorded": "steady_queue.processes.worker.unrecorded",
    "steady_queue.perform": "steady_queue.runner.perform",
    "steady_queue.deadlines": "steady_queue.runner.deadlines",
    "steady_queue.cancellation": "steady_queue.runner.cancellation",
    # One package per database's fast storage (steady_queue.storage.postgres, .mysql and
    # .sqlite were modules: the packages keep their names).
    "steady_queue.storage.postgres_cursor": "steady_queue.storage.postgres.cursor",
    "steady_queue.storage.postgres_enqueue": "steady_queue.storage.postgres.enqueue",
    "steady_queue.storage.postgres_grouped": "steady_queue.storage.postgres.grouped",
    "steady_queue.storage.postgres_hand_on": "steady_queue.storage.postgres.hand_on",
    "steady_queue.storage.mysql_enqueue": "steady_queue.storage.mysql.enqueue",
    "steady_queue.storage.mysql_grouped": "steady_queue.storage.mysql.grouped",
    "steady_queue.storage.mysql_hand_on": "steady_queue.storage.mysql.hand_on",
    "steady_queue.storage.mysql_script": "steady_queue.storage.mysql.script",
    "steady_queue.storage.sqlite_claim": "steady_queue.storage.sqlite.claim",
    "steady_queue.storage.sqlite_enqueue": "steady_queue.storage.sqlite.enqueue",
    "steady_queue.storage.sqlite_grouped": "steady_queue.storage.sqlite.grouped",
    "steady_queue.storage.sqlite_hand_on": "steady_queue.storage.sqlite.hand_on",
    "steady_queue.storage.sqlite_values": "steady_queue.storage.sqlite.values",
    # The job's mixins and the execution tables with their finish: two packages of models.
    "steady_queue.models.job_cancellation": "steady_queue.models.job.cancellation",
    "steady_queue.models.job_clearable": "steady_queue.models.job.clearable",
    "steady_queue.models.job_concurrency": "steady_queue.models.job.concurrency_controls",
    "steady_queue.models.job_executable": "steady_queue.models.job.executable",
    "steady_queue.models.job_groups": "steady_queue.models.job.groups",
    "steady_queue.models.job_operations": "steady_queue.models.job.operations",
    "steady_queue.models.job_rate_limited": "steady_queue.models.job.rate_limited",
    "steady_queue.models.job_retryable": "steady_queue.models.job.retryable",
    "steady_queue.models.job_unique": "steady_queue.models.job.unique",
    "steady_queue.models.throttled_execution": "steady_queue.models.execution.throttled",
    "steady_queue.models.waiting_execution": "steady_queue.models.execution.waiting",
    "steady_queue.models.claimed_finish": "steady_queue.models.execution.claimed_finish",
    "steady_queue.models.claimed_lifecycle": "steady_queue.models.execution.claimed_lifecycle",
    "steady_queue.models.outcomes": "steady_queue.models.execution.outcomes",
    "steady_queue.models.slot_hand_on": "steady_queue.models.execution.slot_hand_on",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._specs: dict[str, ModuleSpec] = {}

    def find_spec(self, fullname, path=None, target=None) -> ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec):
        # The new module itself; importlib then files it under the old name too.
        module = importlib.import_module(MOVED[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # Nothing to run (it was imported under its new name); importlib has set the old
        # name's spec on it, though: give it back its own, so that it stays itself.
        module.__spec__ = self._specs.pop(module.__spec__.name)


FINDER = _MovedModuleFinder()


def install() -> None:
    """Put the finder on ``sys.meta_path`` once, right after the path finder."""
    if FINDER not in sys.meta_path:
        # After the path finder, so a module that exists at its old path wins; before the
        # finders added later, such as an editable install's: pointing at another checkout
        # (the main one, from a worktree), it would answer an old path with a stale copy.
        finders = sys.meta_path
        at = finders.index(PathFinder) + 1 if PathFinder in finders else len(finders)
        sys.meta_path.insert(at, FINDER)
