"""Prune processes that stopped sending heartbeats, failing the jobs they held.

Also the one definition of alive and stale: a process is alive while its last
heartbeat is at or after ``alive_cutoff()`` (``process_alive_threshold`` ago), stale
(and prunable) once it is before it. Metrics, health checks and the dashboard ask here.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import Q, QuerySet
from django.utils import timezone

import steady_queue

from .. import db
from ..exceptions import ProcessPrunedError

if TYPE_CHECKING:
    from .process import Process

logger = logging.getLogger("steady_queue.processes")

PRUNE_BATCH_SIZE = 50


def alive_cutoff(now: datetime | None = None) -> datetime:
    """The oldest heartbeat of a live process (at ``now``, by default the present)."""
    return (now or timezone.now()) - steady_queue.process_alive_threshold


def heartbeat_is_alive(last_heartbeat_at: datetime, now: datetime | None = None) -> bool:
    """Whether a process whose last heartbeat was ``last_heartbeat_at`` is alive."""
    return last_heartbeat_at >= alive_cutoff(now)


class Prunable:
    alive_cutoff = staticmethod(alive_cutoff)
    heartbeat_is_alive = staticmethod(heartbeat_is_alive)

    @staticmethod
    def alive_condition(now: datetime | None = None) -> Q:
        """The live processes, as a condition on Process."""
        return Q(last_heartbeat_at__gte=alive_cutoff(now))

    def is_alive(self, now: datetime | None = None) -> bool:
        return heartbeat_is_alive(self.last_heartbeat_at, now)

    @classmethod
    def prunable(cls) -> QuerySet:
        """Processes whose last heartbeat is older than ``process_alive_threshold``."""
        return cls.objects.exclude(cls.alive_condition())

    @classmethod
    def prune(cls, excluding: Process | None = None) -> int:
        """Remove dead processes, failing their claimed jobs with ProcessPrunedError."""
        candidates = cls.prunable()
        if excluding is not None:
            candidates = candidates.exclude(pk=excluding.pk)
        ids = list(candidates.order_by("pk").values_list("pk", flat=True)[:PRUNE_BATCH_SIZE])
        return sum(cls._prune_one(pk) for pk in ids)

    @classmethod
    def _prune_one(cls, pk: int) -> bool:
        with db.atomic():
            # Skip a row another supervisor is pruning right now.
            process = cls.prunable().filter(pk=pk).locked().first()
            if process is None:
                return False
            logger.info(
                "Pruning %s: no heartbeat since %s", process, process.last_heartbeat_at.isoformat()
            )
            process.fail_all_claimed_executions_with(process.pruned_error())
            cls.objects.filter(pk=pk).delete()
        return True

    def pruned_error(self) -> ProcessPrunedError:
        return ProcessPrunedError(
            f"Process {self.name} (pid {self.pid} on {self.hostname or 'unknown host'}) was "
            f"pruned: no heartbeat since {self.last_heartbeat_at.isoformat()}"
        )
