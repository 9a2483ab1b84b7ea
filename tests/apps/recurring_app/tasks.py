from steady_queue.recurring_task import recurring
from tests.tasks.features import tick

recurring(schedule="* * * * * *", key="every second", args=("tick",))(tick)
