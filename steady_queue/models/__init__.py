from . import states
from .archived_job import ArchivedJob
from .batch import Batch
from .durable import JobSignal, JobStep
from .execution import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    ReadyExecution,
    ScheduledExecution,
)
from .execution.paused import PausedExecution
from .execution.throttled import ThrottledExecution
from .execution.waiting import WaitingExecution
from .fair_weight import FairWeight
from .finished_history import FinishedHistory
from .job import Job
from .label import JobLabel
from .pause import Pause
from .process import Process
from .prune_tally import PruneTally
from .queue import Queue
from .rate_limit import RateLimitBucket, RateLimitSlot
from .recurring import RecurringExecution, RecurringTask
from .run_log import JobLogLine, StackRequest
from .semaphore import Semaphore
from .task_pause import TaskPause
from .task_rollup import TaskRollup
from .unique_lock import UniqueLock
from .workflow import WorkflowDependency, WorkflowRun, WorkflowStep

# Every execution table is loaded: a state word without its table fails here.
states.seal()

__all__ = [
    "ArchivedJob",
    "Batch",
    "BlockedExecution",
    "ClaimedExecution",
    "FailedExecution",
    "FairWeight",
    "FinishedHistory",
    "Job",
    "JobLabel",
    "JobLogLine",
    "JobSignal",
    "JobStep",
    "Pause",
    "PausedExecution",
    "Process",
    "PruneTally",
    "Queue",
    "RateLimitBucket",
    "RateLimitSlot",
    "ReadyExecution",
    "RecurringExecution",
    "RecurringTask",
    "ScheduledExecution",
    "Semaphore",
    "StackRequest",
    "TaskPause",
    "TaskRollup",
    "ThrottledExecution",
    "UniqueLock",
    "WaitingExecution",
    "WorkflowDependency",
    "WorkflowRun",
    "WorkflowStep",
]
