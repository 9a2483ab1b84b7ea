"""Queues through the engine's Queue: size, latency, pause and resume."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from steady_queue.models import Pause
from steady_queue.models.queue import Queue
from steady_queue.ops.queues import all_queues, exists

from .actions import Outcome


def queues() -> list[Queue]:
    """The queues with ready jobs or a pause, and the configured ones (maybe idle), by name.

    The engine's list (``steady_queue.ops.queues``), which the command line shows too.
    """
    return all_queues()


def queue_exists(name: str) -> bool:
    """Whether ``name`` is a queue: configured, paused, or used by any job."""
    return exists(name)


def queue(name: str) -> Queue:
    return Queue(name)


def queue_names() -> list[str]:
    """Return the queue names worth suggesting in filters: configured ones and those in use."""
    return sorted(queue.name for queue in queues())


def pausable(name: str) -> bool:
    """Whether a pause for ``name`` fits its column: a longer name is no queue a job is in,
    and PostgreSQL and MariaDB refuse to store it (a 500, not a message)."""
    return len(name) <= Pause._meta.get_field("queue_name").max_length


def pause_queue(name: str) -> Outcome:
    Queue(name).pause()
    return Outcome(
        True, _("Queue %(name)s is paused: workers take no more jobs from it.") % {"name": name}, 1
    )


def resume_queue(name: str) -> Outcome:
    Queue(name).resume()
    return Outcome(True, _("Queue %(name)s is running again.") % {"name": name}, 1)
