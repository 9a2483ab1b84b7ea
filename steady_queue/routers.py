"""Keep the queue tables in their own database: ``steady_queue.routers.SteadyQueueRouter``.

# settings.py
import steady_queue
steady_queue.database = "queue"
DATABASES = {"default": {...}, "queue": {...}}
DATABASE_ROUTERS = ["steady_queue.routers.SteadyQueueRouter"]
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks

import steady_queue

from . import db, ours

APP_LABEL = "steady_queue"
ROUTER_PATH = "steady_queue.routers.SteadyQueueRouter"


class SteadyQueueRouter:
    """Route the steady_queue app's models to ``steady_queue.database``, and only them."""

    def db_for_read(self, model, **hints) -> str | None:
        """Read Steady Queue's models from the queue database; leave the others alone."""
        return db.alias() if model._meta.app_label == APP_LABEL else None

    def db_for_write(self, model, **hints) -> str | None:
        """Write Steady Queue's models to the queue database; leave the others alone."""
        return db.alias() if model._meta.app_label == APP_LABEL else None

    def allow_relation(self, obj1, obj2, **hints) -> bool | None:
        """Allow relations between two of Steady Queue's rows; no opinion otherwise."""
        ours = {obj._meta.app_label == APP_LABEL for obj in (obj1, obj2)}
        return True if ours == {True} else None

    def allow_migrate(self, database: str, app_label: str, **hints) -> bool | None:
        """Create Steady Queue's tables on every queue database, and other apps' tables on none
        of them but ``default``.
        """
        queue_databases = db.queue_aliases()
        if app_label == APP_LABEL:
            return database in queue_databases
        # Keep other apps' tables out of a dedicated queue database.
        return False if database in queue_databases and database != "default" else None


def check_queue_database(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Report a queue database alias that does not exist or is not routed to."""
    return _check_backend_databases() + _check_alias(steady_queue.database)


def _check_backend_databases() -> list[checks.CheckMessage]:
    from .compat import task_backends

    return [
        checks.Error(
            f"TASKS[{backend.alias!r}]['OPTIONS']['database'] is {backend.database!r}, "
            "which is not in DATABASES.",
            hint="Name the alias of the backend's queue database, or remove the option.",
            id="steady_queue.E213",
        )
        for backend in task_backends.all()
        if ours.is_ours(backend) and backend.database and backend.database not in settings.DATABASES
    ]


def _check_alias(alias: str) -> list[checks.CheckMessage]:
    if alias not in settings.DATABASES:
        return [
            checks.Error(
                f"steady_queue.database is {alias!r}, which is not in DATABASES.",
                hint=f"Add DATABASES[{alias!r}] or set steady_queue.database to an existing alias.",
                id="steady_queue.E211",
            )
        ]
    if alias != "default" and ROUTER_PATH not in getattr(settings, "DATABASE_ROUTERS", []):
        return [
            checks.Error(
                f"steady_queue.database is {alias!r} but {ROUTER_PATH} is not in DATABASE_ROUTERS.",
                hint="Without the router, migrations and the dashboard use the wrong database.",
                id="steady_queue.E212",
            )
        ]
    return []
