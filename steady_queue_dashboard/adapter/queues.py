"""Queues through the engine's Queue: size, latency, pause and resume."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from steady_queue.compat import task_backends
from steady_queue.queue import Queue

from .actions import Outcome


def queues() -> list[Queue]:
    """Return the queues with ready jobs or a pause, each with size and latency loaded."""
    return Queue.all()


def queue(name: str) -> Queue:
    return Queue(name)


def queue_names() -> list[str]:
    """Return the queue names worth suggesting in filters: configured ones and those in use."""
    names = {queue.name for queue in Queue.all()}
    for backend in task_backends.all():
        names.update(getattr(backend, "queues", None) or [])
    return sorted(names)


def pause_queue(name: str) -> Outcome:
    Queue(name).pause()
    return Outcome(
        True, _("Queue %(name)s is paused: workers take no more jobs from it.") % {"name": name}, 1
    )


def resume_queue(name: str) -> Outcome:
    Queue(name).resume()
    return Outcome(True, _("Queue %(name)s is running again.") % {"name": name}, 1)
