"""Warn about queues that no configured worker takes jobs from (``manage.py check``)."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

BACKEND_PATH = "steady_queue.backend.SteadyQueueBackend"


def check_unheard_queues(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Warn about queues in TASKS that no worker of the configuration polls.

    Jobs enqueued to such a queue wait forever. A backend without QUEUES accepts any
    queue; then only Django's default queue, "default", is checked.
    """
    from .. import configuration

    try:
        workers = configuration.load().configured_workers
    except ImproperlyConfigured:
        return []  # check_configuration reports it
    selectors = [queue for worker in workers for queue in worker.queues]
    unheard = [queue for queue in sorted(_task_queues()) if not polls(selectors, queue)]
    if not unheard:
        return []
    return [
        checks.Warning(
            f"No worker in settings.STEADY_QUEUE takes jobs from the queues: {', '.join(unheard)}.",
            hint=(
                "Jobs enqueued there would wait forever. Add them to a worker's queues "
                '(or use queues=["*"]), or run a worker for them elsewhere.'
            ),
            id="steady_queue.W201",
        )
    ]


def _task_queues() -> set[str]:
    names: set[str] = set()
    for config in getattr(settings, "TASKS", {}).values():
        if config.get("BACKEND") == BACKEND_PATH:
            names.update(config.get("QUEUES") or ["default"])
    return names


def polls(selectors: Iterable[str], queue: str) -> bool:
    """Whether a worker polling ``selectors`` (names, "*", "prefix*") takes jobs from ``queue``."""
    return any(
        s == "*" or s == queue or (s.endswith("*") and queue.startswith(s[:-1])) for s in selectors
    )
