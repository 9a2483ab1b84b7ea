"""Recurring tasks the scheduler of the acceptance process tests finds (examples of
docs/reference/recurring.md)."""

from datetime import timedelta

from steady_queue.task_options.recurring_task import recurring
from tests.acceptance.api import task


@recurring(
    schedule="* * * * * *", key="qa every second", args=("tick",), queue_name="low", priority=7
)
@recurring(
    schedule="0 12 * * *", key="qa daily report", kwargs={"label": "noon"}, description="Noon"
)
@task()
def beat(label):
    return label


@recurring(schedule="0 * * * *", key="qa catch up", catch_up=timedelta(hours=3))
@task()
def hourly():
    return "caught up"
