"""Recurring schedules made at run time: stored, changed and deleted by key.

A dynamic schedule is a ``RecurringTask`` row with ``static=False``. Every scheduler
re-reads the enabled rows at each poll, so a row written here is enqueued from its next
fire time on, by exactly one scheduler per fire time (``Schedulable.enqueue``), with no
restart. Declared schedules (``@recurring``) stay owned by the code: their keys are
refused here, and ``sync_static`` never overwrites a dynamic row.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError
from django.utils import timezone as dj_timezone

from .. import arguments, db
from ..exceptions import ScheduleError
from ..task_options.recurring_runtime import build
from ..task_options.recurring_task import Recurrence, discover
from .recurring import RecurringTask

if TYPE_CHECKING:
    from ..compat import Task


def schedule(
    key: str,
    task: Task | str,
    *,
    cron: str,
    args: list | tuple = (),
    kwargs: dict[str, Any] | None = None,
    queue_name: str | None = None,
    priority: int | None = None,
    timezone: str | None = None,
    description: str = "",
    catch_up: timedelta | None = None,
) -> RecurringTask:
    """Create or update the dynamic recurring schedule ``key``; return its row.

    ``task`` is a Task or its dotted path; ``cron`` croniter's syntax, read in
    ``timezone`` (an IANA name; default ``settings.TIME_ZONE``), daylight saving time
    included; ``args``/``kwargs`` are checked against the task's signature and stored as
    an enqueue stores them; ``catch_up`` as for ``@recurring``. Every running scheduler
    enqueues it from its next fire time on, within one poll, exactly once per fire time.
    An update keeps the schedule paused or not as it was. Raises
    ``steady_queue.exceptions.ScheduleError`` (nothing written) for bad input or a key
    declared with ``@recurring``.
    """
    recurrence = build(
        key,
        task,
        cron=cron,
        args=args,
        kwargs=kwargs,
        queue_name=queue_name,
        priority=priority,
        timezone=timezone,
        description=description,
        catch_up=catch_up,
    )
    row, _created = store(recurrence)
    return row


def unschedule(key: str) -> bool:
    """Delete the dynamic recurring schedule ``key``; return False if there was none.

    Jobs it enqueued already stay. A schedule declared with ``@recurring`` raises
    ``ScheduleError``: pause it (``RecurringTask.disable``) instead.
    """
    return remove(key)


def store(recurrence: Recurrence) -> tuple[RecurringTask, bool]:
    """Create or update the dynamic schedule ``recurrence.key``; return it and whether it is new.

    An update keeps the row's enabled flag and its last enqueued run (no run at or before
    it is enqueued again); a changed cron or time zone counts from the next poll on.
    """
    refuse_declared(recurrence.key)
    values = _values(recurrence)
    try:
        with db.atomic():
            updated = RecurringTask.objects.dynamic().filter(key=recurrence.key).update(**values)
            if not updated:
                RecurringTask.objects.create(key=recurrence.key, static=False, **values)
    except IntegrityError as exc:  # a declared row of this key appeared meanwhile
        raise ScheduleError(_declared_message(recurrence.key), field="key") from exc
    return RecurringTask.objects.get(key=recurrence.key), not updated


def remove(key: str) -> bool:
    """Delete the dynamic schedule ``key`` (its past runs' jobs stay); False if there is none.

    A declared schedule is refused: its row belongs to the code (pause it instead).
    """
    deleted, _ = RecurringTask.objects.dynamic().filter(key=key).delete()
    if not deleted and RecurringTask.objects.static().filter(key=key).exists():
        raise ScheduleError(_declared_message(key), field="key")
    return bool(deleted)


def refuse_declared(key: str) -> None:
    """Raise ``ScheduleError`` when ``key`` is a schedule declared with ``@recurring``."""
    declared = {recurrence.key for recurrence in discover()}
    if key in declared or RecurringTask.objects.static().filter(key=key).exists():
        raise ScheduleError(_declared_message(key), field="key")


def _declared_message(key: str) -> str:
    return (
        f"Recurring task {key!r} is declared in code with @recurring: it cannot be "
        "changed or deleted at run time (pause it instead), and its key cannot be reused."
    )


def _values(recurrence: Recurrence) -> dict:
    return {
        "schedule": recurrence.schedule,
        "task_path": recurrence.task.module_path,
        "arguments": arguments.serialize(recurrence.args, recurrence.kwargs),
        "queue_name": recurrence.queue_name or "",
        "priority": recurrence.priority,
        "description": recurrence.description,
        "catch_up_window": recurrence.catch_up,
        "timezone": recurrence.timezone,
        "updated_at": dj_timezone.now(),
    }
