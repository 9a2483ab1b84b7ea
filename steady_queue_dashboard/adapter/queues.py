"""Queues through the engine's Queue: size, latency, pause and resume."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from steady_queue.models.queue import Queue

from .actions import Outcome


def queues() -> list[Queue]:
    """Return the queues with ready jobs or a pause, and the configured ones (maybe idle).

    Each has its size and latency loaded: a configured queue can be paused before
    its first job.
    """
    from .overview import configured_queues

    found = Queue.all()
    known = {queue.name for queue in found}
    idle = [Queue._loaded(name, None, False) for name in configured_queues() - known]
    return sorted(found + idle, key=lambda queue: queue.name)


def queue_exists(name: str) -> bool:
    """Whether ``name`` is a queue: configured, paused, or used by any job."""
    from steady_queue.models import Job, Pause

    from .overview import configured_queues

    if name in configured_queues():
        return True
    if "\x00" in name:  # no database stores it, and PostgreSQL refuses to compare it
        return False
    jobs = Job.objects.filter(queue_name=name)
    return jobs.exists() or Pause.objects.filter(queue_name=name).exists()


def queue(name: str) -> Queue:
    return Queue(name)


def queue_names() -> list[str]:
    """Return the queue names worth suggesting in filters: configured ones and those in use."""
    return sorted(queue.name for queue in queues())


def pause_queue(name: str) -> Outcome:
    Queue(name).pause()
    return Outcome(
        True, _("Queue %(name)s is paused: workers take no more jobs from it.") % {"name": name}, 1
    )


def resume_queue(name: str) -> Outcome:
    Queue(name).resume()
    return Outcome(True, _("Queue %(name)s is running again.") % {"name": name}, 1)
