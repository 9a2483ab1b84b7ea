"""The call of a run's task: its arguments, its deadline, the JSON policy of its value.

A run (``perform.performing``) yields one ``Call``; its driver calls it on its own
thread (``drive``, under the watchdog's deadline) or awaits its coroutine on a
worker's event loop (``processes.async_slots``), and sends back what it returned.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Generator
from typing import Any

from asgiref.sync import iscoroutinefunction

from .. import arguments, encryption, storage
from ..compat import TaskContext, TaskResult, normalize_json
from ..models import ClaimedExecution
from ..models.execution.claimed_finish import Failure
from ..task_options import timeouts
from . import deadlines, run_logs

#: A run's steps: it yields its Call, is sent the call's return value, returns its end.
Run = Generator["Call", Any, tuple[TaskResult | None, storage.Finished]]


@dataclasses.dataclass
class Call:
    """The call of a run's task: what a driver of ``performing`` calls, or awaits."""

    claimed: ClaimedExecution
    task: Any  # the Task
    args: list
    kwargs: dict
    seconds: float | None  # its timeout

    @property
    def is_async(self) -> bool:
        return iscoroutinefunction(self.task.func)

    def coroutine(self):
        """The task's coroutine (an ``async def`` task), to await on a loop."""
        return self.task.func(*self.args, **self.kwargs)

    def run(self):
        """Call the task on this thread, under its deadline (an async task on a loop of its own)."""
        call = functools.partial(self.task.call, *self.args, **self.kwargs)
        if self.is_async:
            return deadlines.call_async_with_deadline(
                self.claimed, self.seconds, call, self.coroutine, end_job=end_stuck
            )
        return deadlines.call_with_deadline(self.claimed, self.seconds, call, end_job=end_stuck)


def end_stuck(claimed: ClaimedExecution, error: BaseException, final: bool) -> bool:
    """End the job of a run that did not stop when interrupted (``deadlines.EndJob``)."""
    return storage.for_alias().finish(claimed, Failure(error, final=final)).recorded


def call(task, started: TaskResult, claimed: ClaimedExecution) -> Generator[Call, Any, Any]:
    """Yield the task's ``Call``; return what it returned, as the JSON a database stores."""
    job = claimed.job
    # Opened here, once, before the task is called (EncryptionKeyMissing: never called).
    args, kwargs = arguments.deserialize(job.arguments)
    if task.takes_context:
        args = [TaskContext(task_result=started), *args]
    seconds = timeouts.seconds_for(job.task_path)
    # Its log lines are kept while it is called; the last of them written as it returns.
    with run_logs.capture(job, code=getattr(task.func, "__code__", None)):
        return_value = yield Call(claimed, task, list(args), kwargs, seconds)
    return_value = normalize_json(return_value)
    # NaN and infinities pass normalize_json but no database stores them as JSON:
    # refuse them here so the job fails (under its retry policy) like any task error.
    json.dumps(return_value, allow_nan=False)
    if encryption.is_encrypted(job.task_path):
        return encryption.seal(return_value)
    return return_value


def drive(steps: Run) -> tuple[TaskResult | None, storage.Finished]:
    """Run ``steps`` on this thread: call its Call, send it what that returned (or raised)."""
    try:
        call = next(steps)
        while True:  # once: a run yields one call
            try:
                value = call.run()
            except BaseException as exc:
                call = steps.throw(exc)
            else:
                call = steps.send(value)
    except StopIteration as ended:
        return ended.value
