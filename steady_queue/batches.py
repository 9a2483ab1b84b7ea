"""Batches: enqueue jobs together, and have callbacks enqueued once all of them ended.

::

    from steady_queue.batches import batch

    with batch(on_finish=summarise, on_failure=alert, description="import 2026-11") as b:
        for row_id in row_ids:
            import_row.enqueue(row_id)      # any enqueue on this thread joins the batch
    b.id, b.total

The block runs in a transaction of the batch's queue database: the batch and its jobs
are stored together when it exits, and nothing is if it raises. Callbacks are tasks,
called with the batch's id: ``on_finish`` whenever every job has ended (succeeded, or
failed for good after its retries; cancelled and discarded jobs count as failed),
``on_success`` if none failed, ``on_failure`` if some did. How ends are counted, and
why callbacks are enqueued exactly once: ``steady_queue.models.batch``.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from contextvars import ContextVar

from . import db, ours
from .compat import Task, task_backends
from .exceptions import BatchError
from .models import Batch, Job
from .models.batch import Progress, callback_spec

__all__ = ["Batch", "BatchError", "Progress", "batch"]

# The batch open on this thread (or asyncio task), and the queue database it lives in.
_open: ContextVar[tuple[Batch, str] | None] = ContextVar("steady_queue_batch", default=None)


@contextlib.contextmanager
def batch(
    *,
    on_finish: Task | None = None,
    on_success: Task | None = None,
    on_failure: Task | None = None,
    description: str = "",
    backend: str | None = None,
) -> Iterator[Batch]:
    """Open a batch: every job enqueued on this thread inside the block joins it.

    ``backend`` is the Steady Queue backend whose queue database keeps the batch (by
    default the callbacks' backend, else ``"default"``); its jobs must be enqueued
    there too. Yields the ``Batch``: its ``id`` at once, its ``total`` once the block
    exits. Raises BatchError, before anything is written, for a callback that is no
    task of that backend or cannot take the batch id as its first argument, and for a
    batch opened inside another.
    """
    if _open.get() is not None:
        raise BatchError("A batch is already open on this thread: batches do not nest.")
    callbacks = {"on_finish": on_finish, "on_success": on_success, "on_failure": on_failure}
    for name, task in callbacks.items():
        if task is not None and not isinstance(task, Task):
            raise BatchError(f"{name} must be a task (decorated with @task), not {task!r}.")
    alias = backend or next((t.backend for t in callbacks.values() if t is not None), "default")
    database = _queue_database(alias)
    specs = {name: _checked_callback(name, task, alias) for name, task in callbacks.items()}
    if len(description) > Batch._meta.get_field("description").max_length:
        raise BatchError("A batch's description is at most 255 characters long.")
    with db.using_alias(database), db.atomic():
        opened = Batch.objects.create(description=description, backend=alias, **specs)
        token = _open.set((opened, db.alias()))
        try:
            yield opened
        finally:
            _open.reset(token)
        opened.seal(Job.objects.filter(batch_id=opened.pk).count())


def joining(database: str | None) -> Batch | None:
    """The batch that jobs enqueued now into ``database`` (None: the default) join.

    Called by the backend as it builds jobs; refuses jobs of another queue database,
    which the batch's transaction could not store with it.
    """
    current = _open.get()
    if current is None:
        return None
    opened, alias = current
    with db.using_alias(database):
        if db.alias() != alias:
            raise BatchError(
                f"The open batch lives in database {alias!r}: a job enqueued into "
                f"{db.alias()!r} cannot join it."
            )
    return opened


def _queue_database(alias: str) -> str | None:
    try:
        backend = task_backends[alias]
    except Exception as exc:
        raise BatchError(f"No task backend {alias!r} for the batch.") from exc
    if not ours.is_ours(backend):
        raise BatchError(f"Backend {alias!r} is no Steady Queue backend: it keeps no batch.")
    return backend.database


def _checked_callback(name: str, task: Task | None, alias: str) -> dict | None:
    if task is None:
        return None
    if task.backend != alias:
        raise BatchError(
            f"{name} task {task.module_path} uses backend {task.backend!r}; "
            f"the batch lives in backend {alias!r}."
        )
    leading = (None,) if task.takes_context else ()
    try:
        inspect.signature(task.func).bind(*leading, 0)
    except TypeError as exc:
        raise BatchError(
            f"{name} task {task.module_path} must take the batch id as its first argument."
        ) from exc
    return callback_spec(task)
