"""Every system check of Steady Queue, registered here and only here (``manage.py check``).

The checks live beside what they check when that is where they read best (the
configuration's in ``configuration``, the queue database's in ``routers``); the ones
about the set-up as a whole are in this package. None is tagged "database": Django
runs those only with ``--database``, and these read settings only.
"""

from django.core import checks

from ..configuration import check_configuration
from ..routers import check_queue_database
from .job_logs import check_job_log_settings
from .queues import check_unheard_queues, polls
from .recurring import check_recurring_tasks
from .retention import check_retention_rules
from .setup import BACKEND_PATH, check_backend, check_backend_configured, check_sqlite_concurrency

__all__ = ["BACKEND_PATH", "check_backend", "polls"]

for _check in (
    check_sqlite_concurrency,
    check_backend_configured,
    check_configuration,
    check_queue_database,
    check_unheard_queues,
    check_recurring_tasks,
    check_job_log_settings,
    check_retention_rules,
):
    checks.register(_check, checks.Tags.compatibility)
