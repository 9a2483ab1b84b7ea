"""Exceptions raised by Steady Queue's operations and context API."""

from __future__ import annotations

import os
import signal
from datetime import datetime


class JobStateError(Exception):
    """The action does not apply to the job in its current state (the message says why)."""


class JobNotEditable(JobStateError):
    """``Job.edit()`` refused: the job has started, ended, or is being claimed right now.

    ``state`` is the job's state when it was refused (``"running"``, ``"finished"``,
    ``"cancelled"``...); the message names it. Nothing was changed.
    """

    def __init__(self, message: str, *, state: str = ""):
        super().__init__(message)
        self.state = state


class UniqueKeyConflict(JobNotEditable):
    """An edit that would give a ``@unique`` task's job a key another job holds.

    ``holder_id`` is the job holding the key. Nothing was changed.
    """

    def __init__(self, message: str, *, state: str = "", holder_id: int | None = None):
        super().__init__(message, state=state)
        self.holder_id = holder_id


class RescheduleJob(BaseException):
    """Raised by ``steady_queue.context.reschedule()`` to run the job again later.

    A ``BaseException`` so that a task's own ``except Exception`` does not swallow it.
    """

    def __init__(self, run_at: datetime):
        super().__init__(f"Rescheduled for {run_at.isoformat()}")
        self.run_at = run_at


class JobCancelled(BaseException):
    """The error of a cancelled job (``Job.cancel()``, ``cancel_all()``, the dashboard).

    Raised by ``report_progress`` in a running job whose cancellation was asked for. A
    ``BaseException``, like ``RescheduleJob``, so that a task's ``except Exception`` does
    not swallow it. A job that ends with it is failed for good: no retry policy applies.
    """


class JobTimeout(Exception):
    """A run went past its task's timeout (``@timeout``); that attempt fails with it.

    An ``Exception``, so that the task's retry policy decides what follows, as for any
    failure. Its traceback shows where the task was when time ran out.
    """

    def __init__(self, message: str = "the job ran past its timeout"):
        super().__init__(message)


class TimeoutInterrupt(BaseException):
    """Raised inside a task's thread when its run is past its timeout.

    A ``BaseException``, so that a task's ``except Exception`` does not swallow it (a
    swallowed one is raised again every 0.2 s while the run goes on). The run still
    ends with ``JobTimeout``, an ``Exception``, for the task's retry policy to decide.
    """


class UnstorableOutcome(Exception):
    """A job's outcome the database refused to store; the job fails with this instead.

    Its message starts ``outcome could not be stored:`` and says what was refused.
    """


# What a job gets when the process running it dies under it. Defined here, below the
# models (which raise them), and documented at ``steady_queue.processes``.


class ProcessExitError(RuntimeError):
    """The process running the job exited before finishing it (killed, crashed or orphaned)."""

    # Stored as the job's error class: name it by its documented import path.
    __module__ = "steady_queue.processes"

    @classmethod
    def from_wait_status(cls, name: str, pid: int, status: int) -> ProcessExitError:
        """Describe how the child ``pid`` ended, from the status ``os.waitpid`` returned."""
        return cls(f"Process {name} (pid {pid}) {describe_wait_status(status)}")


class ProcessPrunedError(RuntimeError):
    """The process running the job stopped sending heartbeats and was pruned."""

    __module__ = "steady_queue.processes"


def describe_wait_status(status: int) -> str:
    """Say in words how a child ended: its exit status or the signal that killed it."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown signal"
        return f"was killed by signal {number} ({name})"
    if os.WIFEXITED(status):
        return f"exited with status {os.WEXITSTATUS(status)}"
    return f"ended with wait status {status}"


class UniqueKeyError(Exception):
    """The key function of a ``@unique`` task raised: nothing was enqueued.

    The message names the task; the key function's exception is the ``__cause__``.
    """


class RateLimitKeyError(Exception):
    """The key function of a ``@rate_limit`` task raised: nothing was enqueued.

    The message names the task; the key function's exception is the ``__cause__``.
    """


class FairnessKeyError(Exception):
    """The key function of a ``@fair`` task raised: nothing was enqueued.

    The message names the task; the key function's exception is the ``__cause__``.
    """


class DependencyFailed(Exception):
    """A workflow step that never ran: a step it depends on failed for good.

    The step's job ends as FAILED with this exception's class and a message naming
    the failed step; steps added with ``run_if="finished"`` run instead.
    """


class WorkflowError(ValueError):
    """A workflow refused at ``Workflow.enqueue()`` (a cycle, an unknown step, a step of
    another backend...): nothing was written."""


class BatchError(ValueError):
    """A batch refused as it opens (a callback that is no task of this backend...), or a
    job that cannot join the open batch: nothing was written."""


class ScheduleError(ValueError):
    """A recurring schedule refused by ``recurring_task.schedule`` (bad cron text, unknown
    time zone, a task that cannot be imported, arguments that cannot be stored, a key of a
    schedule declared in code...): nothing was written. ``field`` names the argument at
    fault (``"cron"``, ``"timezone"``, ``"task"``, ``"args"``...), for a form to show it."""

    def __init__(self, message: str, *, field: str = ""):
        super().__init__(message)
        self.field = field


class TaskPauseError(ValueError):
    """``pause_task`` / ``resume_task`` given something that names no task (not a Task,
    or a path that does not import to one): nothing was written."""


#: The ``exception_class`` a cancelled job's failure is stored with: the dashboard, the ops
#: commands and the health checks tell cancelled jobs from failed ones by it (an index).
CANCELLED_CLASS = f"{JobCancelled.__module__}.{JobCancelled.__qualname__}"


class EmbeddedQueueAlreadyRunning(RuntimeError):
    """``steady_queue.embedded.start()`` was called while this process runs a queue already."""


class InvalidLabels(ValueError):
    """Labels that a job cannot carry (``steady_queue.labels``): not a non-empty string,
    longer than ``MAX_LENGTH`` characters, or more than ``MAX_LABELS`` on one job.

    Raised where the labels are given (``@labels(...)``, ``labels(...)``) or as the job is
    built, before anything is written.
    """


class InvalidMetadata(ValueError):
    """Metadata a job cannot keep (``steady_queue.context.set_metadata``): a value that is
    not JSON, or a whole that would pass ``MAX_BYTES`` once serialized. Nothing is written.
    """


# Durable execution (``steady_queue.durable``).


class SignalTimeout(Exception):
    """``wait_for_signal(context, name, timeout=...)``: the signal did not come in time.

    Raised at the wait, in the run after the deadline passed; the task may catch it and
    go on. Every later run of the job raises it again at the same wait (the timeout is
    recorded, as a step's result is). ``name`` is the signal waited for.
    """

    def __init__(self, message: str, *, name: str = ""):
        super().__init__(message)
        self.name = name


class SignalNotDeliverable(Exception):
    """``send_signal`` refused: nothing was written.

    The job does not exist, has ended (finished, failed or cancelled), already received
    a signal of that name, or already stopped waiting for it (delivered or timed out).
    """


class DurableStepError(ValueError):
    """A durable call the job cannot record: a step or signal name used twice in one
    run, an empty or too long name, or a step result or signal payload that cannot be
    stored (not serializable, or a payload past 64 KB). Nothing was recorded.
    """


class SuspendRun(BaseException):
    """Raised by ``durable.sleep`` / ``wait_for_signal`` to end the run without an attempt.

    A ``BaseException``, like ``RescheduleJob``, so that a task's ``except Exception``
    does not swallow it; the runner turns it into its outcome (not an attempt).
    """


class DurableSleep(SuspendRun):
    """The run ends; the job sleeps until ``run_at`` (``number``: the run's n-th sleep)."""

    def __init__(self, run_at: datetime, number: int):
        super().__init__(f"Sleeping until {run_at.isoformat()}")
        self.run_at, self.number = run_at, number


class AwaitSignal(SuspendRun):
    """The run ends; the job waits for the signal ``name`` (until ``deadline``, if any)."""

    def __init__(self, name: str, deadline: datetime | None, *, new: bool):
        super().__init__(f"Waiting for signal {name!r}")
        self.name, self.deadline, self.new = name, deadline, new
