"""Checks of the set-up: SQLite ready for several processes, a backend in TASKS, the app."""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from .. import db

BACKEND_PATH = "steady_queue.backend.SteadyQueueBackend"


def check_sqlite_concurrency(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Warn when SQLite is not set up for several processes writing at once."""
    config = settings.DATABASES.get(db.alias(), {})
    if config.get("ENGINE") != "django.db.backends.sqlite3":
        return []
    options = config.get("OPTIONS", {})
    wal = "journal_mode=wal" in options.get("init_command", "").lower().replace(" ", "")
    immediate = options.get("transaction_mode") == "IMMEDIATE"
    if immediate and wal and options.get("timeout", 5) >= 5:
        return []
    return [
        checks.Warning(
            "SQLite is not configured for concurrent workers.",
            hint=(
                'Set DATABASES[...]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", '
                '"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"} '
                'so that workers wait for each other instead of failing with "database is locked".'
            ),
            id="steady_queue.W001",
        )
    ]


def check_backend_configured(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Warn when no backend in TASKS is Steady Queue's: nothing could be enqueued to run."""
    backends = [config.get("BACKEND") for config in getattr(settings, "TASKS", {}).values()]
    if BACKEND_PATH in backends:
        return []
    return [
        checks.Warning(
            f"steady_queue is installed but no backend in TASKS is {BACKEND_PATH}.",
            hint=f'Add TASKS = {{"default": {{"BACKEND": "{BACKEND_PATH}"}}}} to your settings.',
            id="steady_queue.W002",
        )
    ]


def check_backend(backend) -> list[checks.CheckMessage]:
    """Checks of one configured SteadyQueueBackend (called by Django's task checks)."""
    messages = []
    if (
        "steady_queue" not in settings.INSTALLED_APPS
        and "steady_queue.apps.SteadyQueueConfig" not in settings.INSTALLED_APPS
    ):
        messages.append(
            checks.Error(
                f"The {backend.alias!r} task backend needs 'steady_queue' in INSTALLED_APPS.",
                id="steady_queue.E001",
            )
        )
    return messages
