"""A process's row: registered at boot, kept fresh by heartbeats, removed at exit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Exists
from django.utils import timezone

from .. import db

if TYPE_CHECKING:
    from .process import Process


class Registration:
    @classmethod
    def register(cls, **attributes) -> Process:
        """Insert the row of a starting process."""
        now = timezone.now()
        return cls.objects.create(last_heartbeat_at=now, created_at=now, **attributes)

    def heartbeat(self, metadata: dict | None = None) -> bool:
        """Record that this process is alive; False when its row is gone (it was pruned).

        ``metadata``, when given, replaces what the dashboard shows of the process
        (a worker's job count and memory), in the same statement.
        """
        rows = type(self).objects.filter(pk=self.pk)
        changes = {"last_heartbeat_at": timezone.now()}
        if metadata is not None:
            changes["metadata"] = self.metadata = metadata
        return rows.update(**changes) > 0

    def row_exists(self) -> Exists:
        """A condition for a claim's query: true while this process's row exists.

        A pruned process's claims were failed with it: it must not make new ones. A claim
        that reads the row while a prune of it is in progress can still be made; the
        worker then asks before starting the job (Heartbeat.confirm), and that heartbeat
        waits for the prune's lock on the row: it finds no row and starts nothing.
        """
        return Exists(type(self).objects.filter(pk=self.pk))

    def deregister(self, *, release_claims: bool = True) -> None:
        """Remove this process's row; its unfinished claimed jobs go back to ready.

        With ``release_claims=False`` they stay claimed by a process that no longer
        exists, for the supervisors' orphan sweep to fail.
        """
        with db.atomic():
            if release_claims:
                self.release_all_claimed_executions()
            type(self).objects.filter(pk=self.pk).delete()
