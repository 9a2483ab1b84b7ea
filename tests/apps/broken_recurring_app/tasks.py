"""Recurring tasks for the scheduler process test: one whose enqueue always raises."""

from steady_queue.task_options.recurring_task import recurring
from tests.tasks.enqueue_errors import broken_key
from tests.tasks.features import tick

recurring(schedule="* * * * * *", key="trust broken")(broken_key)
recurring(schedule="* * * * * *", key="trust healthy", args=("ok",))(tick)
