"""System checks for ``@recurring`` declarations (``manage.py check``)."""

from __future__ import annotations

from collections import Counter

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from .. import arguments, ours
from ..compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from ..task_options.recurring_task import Recurrence, discover, schedule_error, timezone_error


def check_recurring_tasks(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Report invalid schedules, duplicate keys and options that cannot be enqueued."""
    declared = discover()
    duplicates = [key for key, n in Counter(r.key for r in declared).items() if n > 1]
    messages = [
        checks.Error(
            f"Recurring task key {key!r} is declared more than once.",
            hint="Give each @recurring(...) of a task its own key=.",
            id="steady_queue.E201",
        )
        for key in duplicates
    ]
    for recurrence in declared:
        messages += [_error(recurrence, problem) for problem in _problems(recurrence)]
    return messages


def _problems(recurrence: Recurrence) -> list[str]:
    problems = []
    if reason := schedule_error(recurrence.schedule):
        problems.append(f"schedule {recurrence.schedule!r} is invalid: {reason}")
    if reason := timezone_error(recurrence.timezone):
        problems.append(f"timezone {reason}")
    if recurrence.catch_up is not None and recurrence.catch_up.total_seconds() <= 0:
        problems.append("catch_up must be a positive timedelta")
    priority = recurrence.priority
    if priority is not None and not TASK_MIN_PRIORITY <= priority <= TASK_MAX_PRIORITY:
        problems.append(f"priority {priority} is outside {TASK_MIN_PRIORITY}..{TASK_MAX_PRIORITY}")
    return problems + _backend_problems(recurrence) + _argument_problems(recurrence)


def _backend_problems(recurrence: Recurrence) -> list[str]:
    try:
        backend = recurrence.task.get_backend()
    except ImproperlyConfigured:  # InvalidTaskBackend: the alias is not in TASKS
        return [f"its task uses the {recurrence.task.backend!r} backend, which is not in TASKS"]
    if not ours.is_ours(backend):
        return [f"its task uses the {recurrence.task.backend!r} backend, not Steady Queue"]
    queue = recurrence.queue_name or recurrence.task.queue_name
    if backend.queues and queue not in backend.queues:
        return [f"queue {queue!r} is not in TASKS[{backend.alias!r}]['QUEUES']"]
    return []


def _argument_problems(recurrence: Recurrence) -> list[str]:
    try:
        arguments.serialize(recurrence.args, recurrence.kwargs)
    except arguments.SerializationError as exc:
        return [f"its arguments cannot be stored: {exc}"]
    return []


def _error(recurrence: Recurrence, problem: str) -> checks.Error:
    return checks.Error(
        f"Recurring task {recurrence.key!r}: {problem}.",
        obj=recurrence.task.module_path,
        id="steady_queue.E202",
    )
