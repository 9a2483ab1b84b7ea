from __future__ import annotations

from django.db import IntegrityError, models
from django.db.models import F, Value
from django.db.models.functions import Least
from django.utils import timezone

from .. import db
from ..task_options.concurrency import ConcurrencyLimit
from .base import QueueModel


class Semaphore(QueueModel):
    """How many jobs currently hold the concurrency ``key``; ``value`` counts free slots."""

    key = models.CharField(max_length=255, unique=True)
    value = models.IntegerField(default=1)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "steady_queue_semaphores"
        indexes = [
            models.Index(fields=["expires_at"], name="sq_semaphore_expiry"),
            models.Index(fields=["key", "value"], name="sq_semaphore_key_value"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.value})"

    @classmethod
    def wait(cls, key: str, limit: ConcurrencyLimit) -> bool:
        """Take one slot of ``key``; the row's ``value`` counts the slots still free."""
        return db.retry_deadlocks(lambda: cls._wait(key, limit))

    @classmethod
    def _wait(cls, key: str, limit: ConcurrencyLimit) -> bool:
        semaphore = cls.objects.filter(key=key).first()
        if semaphore is None:
            return cls._attempt_creation(key, limit)
        return semaphore.value > 0 and cls._attempt_decrement(key, limit)

    @classmethod
    def take_over_limit(cls, key: str, limit: ConcurrencyLimit) -> None:
        """Take one slot of ``key`` even when none is free: a job released by hand with force.

        ``value`` may go below zero: the key then counts more holders than ``limit.to``, and
        no job of it is admitted until enough of them have given their slot back.
        """
        db.retry_deadlocks(lambda: cls._take_over_limit(key, limit))

    @classmethod
    def _take_over_limit(cls, key: str, limit: ConcurrencyLimit) -> None:
        rows = cls.objects.filter(key=key)
        taken = {"value": F("value") - 1, "expires_at": timezone.now() + limit.expires_in}
        if rows.update(**taken) == 0 and not cls._attempt_creation(key, limit):
            rows.update(**taken)  # another job created it first, and took its last slot

    @classmethod
    def signal(cls, key: str, limit: ConcurrencyLimit, count: int = 1) -> bool:
        """Give back ``count`` slots of ``key``, never above ``limit.to``."""
        updated = cls.objects.filter(key=key, value__lt=limit.to).update(
            value=Least(F("value") + count, Value(limit.to)),
            expires_at=timezone.now() + limit.expires_in,
        )
        return updated > 0

    @classmethod
    def extend(cls, key: str, limit: ConcurrencyLimit) -> bool:
        """Keep a slot of ``key`` taken for another holder: renew its expiry, value unchanged.

        False when the key has no row (it expired) or counts more holders than its limit
        (``take_over_limit``): then the slot must be given back, not passed on.
        """
        renewed = cls.objects.filter(key=key, value__gte=0).update(
            expires_at=timezone.now() + limit.expires_in
        )
        return renewed > 0

    @classmethod
    def expire_in_batches(cls, batch_size: int) -> int:
        """Delete semaphores whose holders never signalled within their duration."""
        expired = cls.objects.filter(expires_at__lt=timezone.now())
        deleted = 0
        while ids := list(expired.order_by("expires_at").values_list("pk", flat=True)[:batch_size]):
            deleted += cls.objects.filter(pk__in=ids).delete()[0]
        return deleted

    @classmethod
    def _attempt_creation(cls, key: str, limit: ConcurrencyLimit) -> bool:
        try:
            with db.atomic():
                cls.objects.create(
                    key=key, value=limit.to - 1, expires_at=timezone.now() + limit.expires_in
                )
            return True
        except IntegrityError:  # another enqueue created it first
            return limit.to > 1 and cls._attempt_decrement(key, limit)

    @classmethod
    def _attempt_decrement(cls, key: str, limit: ConcurrencyLimit) -> bool:
        # The conditional UPDATE is atomic: two racing jobs can never both take the last slot.
        updated = cls.objects.filter(key=key, value__gt=0).update(
            value=F("value") - 1, expires_at=timezone.now() + limit.expires_in
        )
        return updated > 0
