"""Recurring tasks for the scheduler process test: one whose enqueue always raises."""

from steady_queue.task_options.recurring_task import recurring
from tests.tasks.features import tick
from tests.tasks.recurring_trust import broken_key

recurring(schedule="* * * * * *", key="trust broken")(broken_key)
recurring(schedule="* * * * * *", key="trust healthy", args=("ok",))(tick)
