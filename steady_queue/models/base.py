"""The base of every queue table: routed to the queue database in one place.

Like Solid Queue's ``SolidQueue::Record``: ``Model.objects`` reads and writes the
queue database (``steady_queue.database``) whatever the project's routers say, and
``.locked()`` is the one way rows are locked for a claim or a state change.
``Model.objects.db_manager(alias)`` still targets another alias on purpose.
"""

from __future__ import annotations

from django.db import connections, models

from .. import db


class QueueQuerySet(models.QuerySet):
    def locked(self, *, skip_locked: bool = True, only_self: bool = False) -> QueueQuerySet:
        """Lock the rows read, skipping rows others hold where the database can.

        Only inside a transaction (``db.atomic()``); without SKIP LOCKED (old MariaDB)
        the lock waits instead. ``skip_locked=False`` waits for the rows (a group's rows
        locked in a fixed order, one row that must be seen as it is); ``only_self`` locks
        this table's rows and not those of the tables joined in, where the database can
        say so (``FOR UPDATE OF``).
        """
        features = connections[self.db].features
        skip = skip_locked and features.has_select_for_update_skip_locked
        if only_self and features.has_select_for_update_of:
            return self.select_for_update(skip_locked=skip, of=("self",))
        return self.select_for_update(skip_locked=skip)


class QueueManager(models.Manager.from_queryset(QueueQuerySet)):
    # Also the manager of related lookups (job.claimed_execution, process.claimed_executions).
    use_in_migrations = False

    def get_queryset(self) -> QueueQuerySet:
        queryset = super().get_queryset()
        return queryset if self._db else queryset.using(db.alias())


class QueueModel(models.Model):
    """A model whose rows live in the queue database."""

    objects = QueueManager()

    class Meta:
        abstract = True

    def save(self, *args, using: str | None = None, **kwargs) -> None:
        super().save(*args, using=using or self._state.db or db.alias(), **kwargs)

    def delete(self, using: str | None = None, keep_parents: bool = False):
        return super().delete(
            using=using or self._state.db or db.alias(), keep_parents=keep_parents
        )
