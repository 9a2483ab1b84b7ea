"""What a scheduler says at start about the recurring tasks it found, and did not find.

A recurring task is declared in a ``tasks`` module the scheduler imports only for apps
in ``INSTALLED_APPS``: one of an app left out is not declared, and nothing fails. So
the scheduler names the tasks it loaded, and warns for each stored task it cannot
find in the code: the schedule of an earlier deploy, or one added at run time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.apps import apps
from django.utils.module_loading import import_string

from ..task_options.recurring_task import Recurrence

logger = logging.getLogger("steady_queue.scheduler")

# Keys named in the start line, at most: a project may declare hundreds.
LISTED_KEYS = 20
WHERE_DECLARED = "the scheduler imports the tasks module of every app in INSTALLED_APPS"


def log_loaded(keys: Iterable[str]) -> None:
    """Log once at start how many recurring tasks are scheduled, and their keys."""
    keys = sorted(keys)
    if not keys:
        logger.info("Loaded 0 recurring tasks (%s)", WHERE_DECLARED)
        return
    listed = ", ".join(keys[:LISTED_KEYS])
    if len(keys) > LISTED_KEYS:
        listed += f" and {len(keys) - LISTED_KEYS} more"
    noun = "recurring task" if len(keys) == 1 else "recurring tasks"
    logger.info("Loaded %d %s: %s", len(keys), noun, listed)


def warn_unfound(declared: list[Recurrence], stored) -> None:
    """Warn for each task in ``stored`` (RecurringTask rows) the code does not provide.

    A static row no declaration matches is about to be deleted; a row added at run
    time whose task cannot be imported would fail at every run, and one holding the key of
    a declaration keeps it (``sync_static`` leaves the declaration out).
    """
    keys = {recurrence.key for recurrence in declared}
    for row in stored:
        if row.static and row.key not in keys:
            logger.warning(
                "Recurring task %r (task %s) was stored by an earlier start but is not "
                "declared in the code loaded now, so it is removed: %s",
                row.key,
                row.task_path,
                _likely_cause(row.task_path),
            )
        elif not row.static and row.key in keys:
            logger.warning(
                "Recurring task %r is declared in code, but a schedule made at run time "
                "holds its key: the run-time schedule is kept and the declaration left out "
                "(unschedule it, or give the declaration another key)",
                row.key,
            )
        elif not row.static and (problem := _import_problem(row.task_path)):
            logger.warning(
                "Recurring task %r cannot run: its task %s %s", row.key, row.task_path, problem
            )


def _likely_cause(task_path: str) -> str:
    if problem := _import_problem(task_path):
        return f"its task {problem}"
    module = task_path.rpartition(".")[0]
    if apps.get_containing_app_config(module) is None:
        return f"its module {module} belongs to no app in INSTALLED_APPS (add the app to it)"
    return f"its @recurring was removed, or {module} is not imported ({WHERE_DECLARED})"


def _import_problem(task_path: str) -> str | None:
    try:
        import_string(task_path)
    except ImportError as exc:
        return f"cannot be imported ({exc}); is its app in INSTALLED_APPS?"
    return None
