"""Checks of the set-up: SQLite ready for several processes, a backend in TASKS, the app."""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from .. import db

BACKEND_PATH = "steady_queue.backend.SteadyQueueBackend"
# How long (s) an SQLite connection should wait for the write lock, at least: a bulk
# enqueue or an operator's batch may hold it for seconds, several processes queued.
MIN_SQLITE_TIMEOUT = 10
# Python's sqlite3 waits this long where the "timeout" OPTION is not set.
SQLITE3_DEFAULT_TIMEOUT = 5


def check_sqlite_concurrency(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Warn for each SQLite queue database not set up for several processes writing at once.

    Settings only (no query): WAL set on the file some other way goes unseen, and
    asking for it in ``init_command`` as well costs nothing.
    """
    messages = []
    for alias in sorted(db.queue_aliases()):
        config = settings.DATABASES.get(alias, {})
        if config.get("ENGINE") != "django.db.backends.sqlite3":
            continue
        if missing := _sqlite_setup_missing(config.get("OPTIONS", {})):
            messages.append(
                checks.Warning(
                    f"SQLite database {alias!r} is not configured for concurrent workers: "
                    f"{'; '.join(missing)}.",
                    hint=(
                        f'Set DATABASES["{alias}"]["OPTIONS"] = {{"transaction_mode": '
                        f'"IMMEDIATE", "timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"}} '
                        "so that workers wait for each other instead of failing with "
                        '"database is locked", and readers never wait for a writer.'
                    ),
                    id="steady_queue.W001",
                )
            )
    return messages


def _sqlite_setup_missing(options: dict) -> list[str]:
    """What an SQLite database's OPTIONS lack for concurrent workers, in words."""
    missing = []
    init_command = options.get("init_command", "").lower().replace(" ", "").replace("'", "")
    if "journal_mode=wal" not in init_command:
        missing.append("no WAL journal (readers and the writer wait for each other)")
    timeout = options.get("timeout")
    if (SQLITE3_DEFAULT_TIMEOUT if timeout is None else timeout) < MIN_SQLITE_TIMEOUT:
        given = f"{SQLITE3_DEFAULT_TIMEOUT} s, unset" if timeout is None else f"{timeout} s"
        missing.append(f"a busy timeout under {MIN_SQLITE_TIMEOUT} s ({given})")
    if str(options.get("transaction_mode") or "").upper() != "IMMEDIATE":
        missing.append("deferred transactions (a write after a read fails when another wrote)")
    return missing


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
