from steady_queue.task_options.recurring_task import recurring
from tests.tasks.features import tick

recurring(schedule="* * * * * *", key="every second", args=("tick",))(tick)
