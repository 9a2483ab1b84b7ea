"""Queues as operators see them: size, latency, and pausing."""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError
from django.db.models import Count, Min
from django.utils import timezone

from .. import db
from .execution import ReadyExecution
from .pause import Pause


class Queue:
    """A named queue; it exists while it has ready jobs or is paused."""

    def __init__(self, name: str):
        self.name = name
        # Values read by Queue.all() in its two queries; read fresh otherwise.
        self._loaded: dict = {}

    @classmethod
    def all(cls) -> list[Queue]:
        """Return every queue with ready jobs or a pause, sorted by name, in two queries."""

        stats = (
            ReadyExecution.objects.values("queue_name")
            .annotate(size=Count("pk"), oldest=Min("created_at"))
            .order_by()
        )
        by_name = {row["queue_name"]: row for row in stats}
        paused = set(Pause.objects.values_list("queue_name", flat=True))
        return [
            cls._loaded(name, by_name.get(name), name in paused)
            for name in sorted(by_name.keys() | paused)
        ]

    def pause(self) -> None:
        """Stop workers from taking jobs from this queue (jobs can still be enqueued)."""

        try:
            with db.atomic():
                Pause.objects.create(queue_name=self.name)
        except IntegrityError:  # already paused
            pass
        self._loaded.pop("is_paused", None)

    def resume(self) -> None:
        """Let workers take jobs from this queue again."""
        self._pauses().delete()
        self._loaded.pop("is_paused", None)

    @property
    def is_paused(self) -> bool:
        if "is_paused" not in self._loaded:
            return self._pauses().exists()
        return self._loaded["is_paused"]

    @property
    def size(self) -> int:
        """How many jobs are ready to run in this queue."""
        if "size" not in self._loaded:
            return self._ready().count()
        return self._loaded["size"]

    @property
    def latency(self) -> timedelta | None:
        """How long the oldest ready job has been waiting, or None when none is."""
        if "oldest" not in self._loaded:
            oldest = self._ready().aggregate(oldest=Min("created_at"))["oldest"]
        else:
            oldest = self._loaded["oldest"]
        return timezone.now() - oldest if oldest else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Queue) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<Queue {self.name}>"

    @classmethod
    def _loaded(cls, name: str, stats: dict | None, paused: bool) -> Queue:
        queue = cls(name)
        queue._loaded.update(
            size=stats["size"] if stats else 0,
            oldest=stats["oldest"] if stats else None,
            is_paused=paused,
        )
        return queue

    def _ready(self):

        return ReadyExecution.objects.filter(queue_name=self.name)

    def _pauses(self):

        return Pause.objects.filter(queue_name=self.name)
