"""Turn a worker's queue list into the exact queues one poll should read, in order."""

from __future__ import annotations

from django.db.models import QuerySet


class QueueSelector:
    """Resolve ``["*"]``, exact names and ``prefix*`` wildcards, leaving paused queues out.

    ``["*"]`` with nothing paused polls all queues in one query. Otherwise each queue
    is polled on its own so that the ``(queue_name, priority, job_id)`` index sorts;
    wildcards and pauses need one DISTINCT query over the ready table per poll.
    """

    def __init__(self, queues: list[str], relation: QuerySet):
        self.queues = queues or ["*"]
        self.relation = relation

    def scoped_relations(self) -> list[QuerySet]:
        return [
            self.relation if name is None else self.relation.filter(queue_name=name)
            for name in self.scoped_queues()
        ]

    def scoped_queues(self) -> list[str | None]:
        """The queues one poll reads, in order; ``[None]`` means all queues in one query."""
        paused = self._paused_queues()
        if self._all_queues and not paused:
            return [None]
        return self._queue_names(paused)

    @property
    def _all_queues(self) -> bool:
        return "*" in self.queues

    def _queue_names(self, paused: set[str]) -> list[str]:
        has_wildcard = any("*" in entry for entry in self.queues)
        existing = self._existing_queues() if has_wildcard else []
        names: list[str] = []
        for entry in ["*"] if self._all_queues else self.queues:
            matches = [q for q in existing if _matches(entry, q)] if "*" in entry else [entry]
            names.extend(q for q in matches if q not in names and q not in paused)
        return names

    def _existing_queues(self) -> list[str]:
        return sorted(self.relation.values_list("queue_name", flat=True).distinct().order_by())

    def _paused_queues(self) -> set[str]:
        from .pause import Pause

        return set(Pause.objects.using(self.relation.db).values_list("queue_name", flat=True))


def _matches(pattern: str, queue_name: str) -> bool:
    return pattern == "*" or queue_name.startswith(pattern.removesuffix("*"))
