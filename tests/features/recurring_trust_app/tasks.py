"""Recurring tasks for the scheduler process test: one whose enqueue always raises."""

from steady_queue.recurring_task import recurring
from tests.features.recurring_trust_tasks import broken_key
from tests.features.tasks import tick

recurring(schedule="* * * * * *", key="trust broken")(broken_key)
recurring(schedule="* * * * * *", key="trust healthy", args=("ok",))(tick)
