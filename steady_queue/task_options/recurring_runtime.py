"""Check a recurring schedule made at run time, before anything is written.

``steady_queue.recurring_task.schedule`` (and the console's form, and
``manage.py steady_queue_recurring schedule``) builds its ``Recurrence`` here: the cron
text, the time zone, the task (an object or its dotted path), its queue and priority as
its backend checks them, and the arguments bound to the task's signature and serialized
as an enqueue would. Anything wrong raises ``ScheduleError`` naming the field at fault.
"""

from __future__ import annotations

import inspect
from datetime import timedelta
from typing import Any

from django.utils.module_loading import import_string

from .. import arguments
from ..arguments import SerializationError
from ..compat import InvalidTask, Task
from ..exceptions import ScheduleError
from .recurring_task import Recurrence, schedule_error, timezone_error

KEY_MAX_LENGTH = 255


def build(
    key: str,
    task: Task | str,
    *,
    cron: str,
    args: Any = (),
    kwargs: Any = None,
    queue_name: str | None = None,
    priority: int | None = None,
    timezone: str | None = None,
    description: str = "",
    catch_up: timedelta | None = None,
) -> Recurrence:
    """Check a schedule made at run time and return it; raise ``ScheduleError`` if it is bad."""
    _check_key(key)
    _check_length("cron", cron)
    _check_length("queue_name", queue_name)
    if error := schedule_error(cron if isinstance(cron, str) else ""):
        raise ScheduleError(f"Bad cron schedule {cron!r}: {error.rstrip('.')}.", field="cron")
    if error := timezone_error(timezone or ""):
        raise ScheduleError(error + ".", field="timezone")
    if catch_up is not None and (not isinstance(catch_up, timedelta) or catch_up <= timedelta()):
        raise ScheduleError("catch_up must be a positive timedelta, or None.", field="catch_up")
    found = _routed(_task(task), queue_name, priority)
    args, kwargs = _checked_arguments(found, args, kwargs)
    return Recurrence(
        key=key,
        schedule=cron.strip(),
        task=found,
        args=args,
        kwargs=kwargs,
        queue_name=queue_name or None,
        priority=priority,
        description=description or "",
        catch_up=catch_up,
        timezone=timezone or "",
    )


def _check_length(field: str, value: Any) -> None:
    # The columns hold 255 characters: longer text would fail in the database, not here.
    if isinstance(value, str) and len(value) > KEY_MAX_LENGTH:
        raise ScheduleError(f"{field} has at most {KEY_MAX_LENGTH} characters.", field=field)


def _check_key(key: Any) -> None:
    if not isinstance(key, str) or not key.strip():
        raise ScheduleError("A schedule needs a key: a non-empty string.", field="key")
    if len(key) > KEY_MAX_LENGTH or "\x00" in key:
        raise ScheduleError(
            f"A schedule's key has at most {KEY_MAX_LENGTH} characters and no NUL.", field="key"
        )


def _task(task: Task | str) -> Task:
    if isinstance(task, str):
        try:
            task = import_string(task.strip())
        except ImportError as exc:
            raise ScheduleError(f"Cannot import task {task!r}: {exc}", field="task") from exc
    if not isinstance(task, Task):
        raise ScheduleError(
            f"{task!r} is not a task: decorate the function with @task.", field="task"
        )
    return task


def _routed(task: Task, queue_name: str | None, priority: int | None) -> Task:
    """The task with the schedule's queue and priority, checked by its backend."""
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise ScheduleError(f"priority must be an integer, not {priority!r}.", field="priority")
    try:
        routed = task.using(queue_name=queue_name or None, priority=priority)
        routed.get_backend().validate_task(routed)
    except (InvalidTask, ValueError, TypeError, KeyError) as exc:
        field = next((f for f in ("priority", "queue") if f in str(exc).lower()), "task")
        field = {"queue": "queue_name"}.get(field, field)
        message = f"Task {task.module_path} cannot be scheduled: {exc}"
        raise ScheduleError(message, field=field) from exc
    return routed


def _checked_arguments(task: Task, args: Any, kwargs: Any) -> tuple[tuple, dict]:
    """The arguments as a call would take them and as the queue stores them, or the error."""
    if not isinstance(args, list | tuple):
        raise ScheduleError(f"args must be a list, not {type(args).__name__}.", field="args")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict):
        raise ScheduleError(f"kwargs must be a dict, not {type(kwargs).__name__}.", field="kwargs")
    context = (None,) if task.takes_context else ()
    try:
        inspect.signature(task.func).bind(*context, *args, **kwargs)
    except TypeError as exc:
        message = f"{task.module_path} cannot take these arguments: {exc}."
        raise ScheduleError(message, field="args") from exc
    try:
        arguments.serialize(args, kwargs)
    except SerializationError as exc:
        raise ScheduleError(str(exc), field="args") from exc
    return tuple(args), dict(kwargs)
