"""The dashboard's one door into the engine: the querysets it reads and the actions it runs.

Views and templates never query execution tables themselves; everything they
show or change goes through this package, which uses the engine's own models
and operations API (``steady_queue.models``, ``steady_queue.queue``). Its
modules split it by subject; import from the package itself.
"""

from .actions import Outcome, act_on_job, act_on_jobs
from .batches import BatchRow, Callback, batch_jobs, batch_rows, batches, find_batch
from .cancellation import Cancellation, cancellation_of, is_cancelled
from .concurrency import ConcurrencyKey, concurrency_keys, next_blocked_job, release_next_blocked
from .history import Attempt, Event, attempts, run_time, timeline
from .job_queries import (
    Tally,
    activity,
    argument_query,
    arguments_preview,
    capped_count,
    display_arguments,
    display_value,
    failed_jobs_by_ids,
    find_job,
    jobs,
    listing_for,
    status_counts,
)
from .labels import display_metadata, labelled
from .processes import Health, ProcessNode, process_health, process_tree
from .queues import (
    Queue,
    pausable,
    pause_queue,
    queue,
    queue_exists,
    queue_names,
    queues,
    resume_queue,
)
from .rate_limits import (
    JobRateLimit,
    RateLimitWindow,
    RateLimitWindows,
    rate_limit_of,
    rate_limit_windows,
    window_keys,
)
from .recurring import (
    find_recurring_task,
    recurring_runs,
    recurring_tasks,
    run_recurring_task,
    set_recurring_enabled,
)
from .recurring_schedules import (
    Preview,
    delete_schedule,
    preview_schedule,
    save_schedule,
    schedule_values,
)
from .release import KeySlots, ReleaseOutcome, blocked_keys, key_slots, release_job
from .run_logs import RunLog, request_stack, run_log_of, stack_request, still_waiting
from .task_pauses import (
    is_paused,
    pause_task,
    paused_tasks,
    ready_count,
    resume_task,
    task_pause_check,
)
from .task_stats import DEFAULT_WINDOW, WINDOWS, TaskStats, task_stats
from .uniqueness import Uniqueness, uniqueness_of
from .workflows import (
    STEP_STATES,
    RunRow,
    RunSteps,
    StepLinks,
    find_run,
    run_rows,
    run_steps,
    step_links,
    workflow_runs,
)
from .workflows import by_state as steps_by_state

__all__ = [
    "DEFAULT_WINDOW",
    "STEP_STATES",
    "WINDOWS",
    "Attempt",
    "BatchRow",
    "Callback",
    "Cancellation",
    "ConcurrencyKey",
    "Event",
    "Health",
    "JobRateLimit",
    "KeySlots",
    "Outcome",
    "Preview",
    "ProcessNode",
    "Queue",
    "RateLimitWindow",
    "RateLimitWindows",
    "ReleaseOutcome",
    "RunLog",
    "RunRow",
    "RunSteps",
    "StepLinks",
    "Tally",
    "TaskStats",
    "Uniqueness",
    "act_on_job",
    "act_on_jobs",
    "activity",
    "argument_query",
    "arguments_preview",
    "attempts",
    "batch_jobs",
    "batch_rows",
    "batches",
    "blocked_keys",
    "cancellation_of",
    "capped_count",
    "concurrency_keys",
    "delete_schedule",
    "display_arguments",
    "display_metadata",
    "display_value",
    "failed_jobs_by_ids",
    "find_batch",
    "find_job",
    "find_recurring_task",
    "find_run",
    "is_cancelled",
    "is_paused",
    "jobs",
    "key_slots",
    "labelled",
    "listing_for",
    "next_blocked_job",
    "pausable",
    "pause_queue",
    "pause_task",
    "paused_tasks",
    "preview_schedule",
    "process_health",
    "process_tree",
    "queue",
    "queue_exists",
    "queue_names",
    "queues",
    "rate_limit_of",
    "rate_limit_windows",
    "ready_count",
    "recurring_runs",
    "recurring_tasks",
    "release_job",
    "release_next_blocked",
    "request_stack",
    "resume_queue",
    "resume_task",
    "run_log_of",
    "run_recurring_task",
    "run_rows",
    "run_steps",
    "run_time",
    "save_schedule",
    "schedule_values",
    "set_recurring_enabled",
    "stack_request",
    "status_counts",
    "step_links",
    "steps_by_state",
    "still_waiting",
    "task_pause_check",
    "task_stats",
    "timeline",
    "uniqueness_of",
    "window_keys",
    "workflow_runs",
]
