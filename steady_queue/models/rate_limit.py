"""The windows of ``@rate_limit`` tasks: ``RateLimitBucket`` and its ``RateLimitSlot`` rows.

One bucket row per task and key, locked by whoever admits a run of it, so that every
worker and dispatcher of the fleet takes turns. Its slots (never more than ``to`` in
use) each hold the last start made with them; a slot may start another run only once
that start is ``per`` old. Each slot's starts are therefore ``per`` apart, and no
window of length ``per`` holds more than ``to`` starts, whatever the interleaving.

A job made ready under a limit (enqueued with room in its window, or released from
throttled by a dispatcher) reserves a slot, stamped with that moment: ready jobs never
outnumber the window's room, so a backlog waits as throttled, out of every queue's way.
The run's admission (``admit_run``, just before the task starts) stamps the slot again
with its real start; if the reservation went stale (the job waited past ``per``) or
there was none (a retry, a job released by hand), the run takes any free slot, or is
throttled until one frees.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import db
from ..task_options import rate_limits
from .base import QueueModel

if TYPE_CHECKING:
    from .job import Job


class RateLimitBucket(QueueModel):
    """The window of one task and key: its limit as last seen, and its waiting jobs' turn."""

    key = models.CharField(_("key"), max_length=64, primary_key=True)
    task_path = models.CharField(_("task"), max_length=255)
    limit_key = models.CharField(_("rate limit key"), max_length=255)
    to = models.PositiveIntegerField(_("starts"))
    per = models.DurationField(_("per"))
    # While jobs wait as throttled: when a dispatcher should look again (NULL: none wait).
    next_release_at = models.DateTimeField(_("next release at"), null=True, blank=True)
    # The last slot stamp plus ``per``: an idle bucket may be deleted after this.
    expires_at = models.DateTimeField(_("expires at"), default=timezone.now)

    class Meta:
        db_table = "steady_queue_rate_limit_buckets"
        verbose_name = _("rate limit window")
        verbose_name_plural = _("rate limit windows")
        indexes = [
            models.Index(fields=["next_release_at"], name="sq_rate_limit_release"),
            models.Index(fields=["expires_at"], name="sq_rate_limit_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.task_path} [{self.limit_key}]: {self.to} per {self.per}"

    @classmethod
    def locked_for(cls, jobs: Iterable[Job], now: datetime) -> dict[str, RateLimitBucket]:
        """The buckets of ``jobs``, locked (in key order), created where missing.

        A bucket pruned between the insert and the lock is inserted again.
        """
        wanted: dict[str, Job] = {}
        for job in jobs:
            wanted.setdefault(job.rate_limit_bucket_key, job)
        rows = cls.objects.filter(key__in=sorted(wanted)).order_by("key")
        locked = {bucket.key: bucket for bucket in rows.locked(skip_locked=False)}
        while missing := sorted(set(wanted) - set(locked)):
            cls.objects.bulk_create(
                [cls.new_for(wanted[key], now) for key in missing], ignore_conflicts=True
            )
            rows = cls.objects.filter(key__in=missing).order_by("key")
            locked |= {bucket.key: bucket for bucket in rows.locked(skip_locked=False)}
        return locked

    @classmethod
    def new_for(cls, job: Job, now: datetime) -> RateLimitBucket:
        limit = job.rate_limit
        return cls(
            key=job.rate_limit_bucket_key,
            task_path=job.task_path,
            limit_key=job.rate_limit_key,
            to=limit.to if limit else 0,
            per=limit.per if limit else timedelta(0),
            expires_at=now,
        )

    @classmethod
    def prune(cls, batch_size: int = 500) -> int:
        """Delete up to ``batch_size`` idle windows: no job waits, no start within ``per``.

        Their rows (and slots) come back at the next enqueue of their key.
        """
        with db.atomic():
            idle = cls.objects.filter(next_release_at__isnull=True, expires_at__lt=timezone.now())
            oldest = idle.order_by("expires_at").locked().values_list("key", flat=True)
            keys = list(oldest[:batch_size])
            if keys:
                RateLimitSlot.objects.filter(bucket_id__in=keys).delete()
                cls.objects.filter(key__in=keys).delete()
        return len(keys)

    @classmethod
    def wait_for(cls, key: str, at: datetime) -> None:
        """Have a dispatcher look at bucket ``key`` at ``at`` at the latest (a job waits)."""
        late = Q(next_release_at__isnull=True) | Q(next_release_at__gt=at)
        cls.objects.filter(late, key=key).update(next_release_at=at)

    def window(self, now: datetime) -> Window:
        """This bucket's slots as of ``now``, under the task's limit as declared now.

        Inside the transaction that locked this bucket.
        """
        limit = rate_limits.rate_limit_for(self.task_path)
        if limit is not None and (limit.to, limit.per) != (self.to, self.per):
            self.to, self.per = limit.to, limit.per  # redeclared: saved with the window
        # A locking read: the latest stamps even in a REPEATABLE READ transaction whose
        # snapshot is older than the bucket's lock (MySQL's default isolation).
        slots = RateLimitSlot.objects.filter(bucket=self).locked(skip_locked=False)
        return Window(self, limit, list(slots), now)


class RateLimitSlot(QueueModel):
    """One of a window's ``to`` slots: its last start, or a ready job's reservation."""

    bucket = models.ForeignKey(RateLimitBucket, on_delete=models.CASCADE, related_name="slots")
    started_at = models.DateTimeField(_("started at"))
    # The ready job this slot is kept for, stamped when it was made ready.
    reserved_for = models.BigIntegerField(_("reserved for job"), null=True, blank=True)

    class Meta:
        db_table = "steady_queue_rate_limit_slots"
        verbose_name = _("rate limit slot")
        verbose_name_plural = _("rate limit slots")
        indexes = [models.Index(fields=["bucket", "started_at"], name="sq_rate_limit_slots")]


class Window:
    """A locked bucket's slots: which are busy at ``now``, and taking one."""

    def __init__(self, bucket: RateLimitBucket, limit, slots: list[RateLimitSlot], now):
        self.bucket, self.limit, self.slots, self.now = bucket, limit, slots, now
        self.changed: list[RateLimitSlot] = []
        self.added: list[RateLimitSlot] = []

    def _frees_at(self, slot: RateLimitSlot) -> datetime:
        return slot.started_at + self.limit.per + self.limit.margin

    def _busy(self) -> list[RateLimitSlot]:
        return [slot for slot in self.slots if self._frees_at(slot) > self.now]

    def room(self) -> int:
        """How many more runs may start (or be reserved) now."""
        if self.limit is None:
            return 1 << 30
        return max(self.limit.to - len(self._busy()), 0)

    def next_free_at(self) -> datetime:
        """When the window next has room (now, if it has)."""
        if self.limit is None:
            return self.now
        busy = sorted(self._frees_at(slot) for slot in self._busy())
        over = len(busy) - self.limit.to
        return self.now if over < 0 else busy[over]

    def take(self, job_id: int, *, reserve: bool) -> bool:
        """Stamp a slot for job ``job_id`` now (its own reservation first); False: no room."""
        if self.limit is None:
            return True  # no longer declared: nothing to count
        slot = next((s for s in self.slots if s.reserved_for == job_id), None)
        if slot is None:
            if not self.room():
                return False
            busy = {id(s) for s in self._busy()}
            slot = next((s for s in self.slots if id(s) not in busy), None)
        if slot is None:
            slot = RateLimitSlot(bucket=self.bucket, started_at=self.now)
            self.slots.append(slot)
            self.added.append(slot)
        elif slot not in self.added and slot not in self.changed:
            self.changed.append(slot)
        slot.started_at, slot.reserved_for = self.now, (job_id if reserve else None)
        return True

    def save(self, *, waiting: bool | None = None) -> None:
        """Write the stamped slots; ``waiting``: whether jobs wait (None: unchanged)."""
        if self.added:
            RateLimitSlot.objects.bulk_create(self.added)
        if self.changed:
            RateLimitSlot.objects.bulk_update(self.changed, ["started_at", "reserved_for"])
        bucket, fields = self.bucket, ["to", "per"]
        if self.limit is not None and self.slots:
            bucket.expires_at = max(self._frees_at(slot) for slot in self.slots)
            fields.append("expires_at")
        if waiting is not None:
            bucket.next_release_at = self.next_free_at() if waiting else None
            fields.append("next_release_at")
        bucket.save(update_fields=fields)
        self.added, self.changed = [], []


def admit_all(jobs: list[Job]) -> list[Job]:
    """Of ``jobs`` about to become ready, those their windows have room for (slots reserved).

    The others wait as throttled; so does every job of a window where jobs already
    wait, so that they keep their turn. Run inside the enqueue's (or dispatch's)
    transaction.
    """
    from .execution.throttled import ThrottledExecution

    buckets = RateLimitBucket.locked_for(jobs, timezone.now())
    now = timezone.now()
    windows: dict[str, Window] = {}
    admitted, throttled, waiting_keys = [], [], set()
    for job in jobs:
        key = job.rate_limit_bucket_key
        if key not in windows:
            windows[key] = buckets[key].window(now)
            if buckets[key].next_release_at is not None:
                waiting_keys.add(key)
        if key not in waiting_keys and windows[key].take(job.pk, reserve=True):
            admitted.append(job)
        else:
            throttled.append(job)
            waiting_keys.add(key)
    for key, window in windows.items():
        window.save(waiting=True if key in waiting_keys else None)
    ThrottledExecution.create_all_from_jobs(throttled)
    return admitted


def admit_run(job: Job) -> datetime | None:
    """Admit the run of ``job`` now (None), or return when its window next has room.

    Its own transaction, just before the task starts: the slot's stamp is the run's
    start as the fleet counts it.
    """

    def admit() -> datetime | None:
        with db.atomic():
            bucket = RateLimitBucket.locked_for([job], timezone.now())[job.rate_limit_bucket_key]
            # Once the lock is ours: a stamp taken before waiting for it would be early.
            window = bucket.window(timezone.now())
            if window.take(job.pk, reserve=False):
                window.save()
                return None
            return window.next_free_at()

    return db.retry_deadlocks(admit)
