"""The key of a ``@unique`` task, held by one job at a time: ``UniqueLock``.

One row per key, its primary key a digest of the task path and the job's key: two
enqueues of one key can never both insert it, whatever the database and however
they interleave. A row is free when it has expired (``expires_at``, set for a
``period``); a lock for the job's lifetime (``expires_at`` NULL) is deleted where the
job ends for good (``release``), and every lock goes with its job (ON DELETE CASCADE).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import IntegrityError, models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import db
from ..task_options import uniqueness
from .base import QueueModel

if TYPE_CHECKING:
    from .job import Job


class LostRace(IntegrityError):
    """Another enqueue took a key between this one's read and its insert: try again."""


class UniqueLock(QueueModel):
    """The job that holds a unique key, and until when (None: until that job ends)."""

    key = models.CharField(_("key"), max_length=64, primary_key=True)
    job = models.OneToOneField(
        "steady_queue.Job", on_delete=models.CASCADE, related_name="unique_lock"
    )
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    created_at = models.DateTimeField(_("taken at"), default=timezone.now)

    class Meta:
        db_table = "steady_queue_unique_locks"
        verbose_name = _("unique lock")
        verbose_name_plural = _("unique locks")

    def __str__(self) -> str:
        return f"{self.key[:12]}… held by job {self.job_id}"

    def is_free(self, now: datetime) -> bool:
        """Whether another job may take this key: its period is over."""
        return self.expires_at is not None and self.expires_at <= now

    @classmethod
    def take_all(cls, jobs: Iterable[Job], expired: list[str], now: datetime) -> None:
        """Take the key of each of ``jobs`` (just inserted); ``expired`` are keys seen free.

        The expired rows are deleted only if still expired; an insert that meets a row
        another enqueue committed meanwhile raises LostRace (the caller rolls back).
        """
        if expired:
            cls.objects.filter(key__in=expired, expires_at__lte=now).delete()
        rows = [cls(key=job.unique_lock_key, job=job, expires_at=_expiry(job, now)) for job in jobs]
        try:
            cls.objects.bulk_create(rows)
        except IntegrityError as exc:
            raise LostRace(f"A unique key was taken meanwhile: {exc}") from exc

    @classmethod
    def retake_all(cls, jobs: Iterable[Job]) -> None:
        """Give retried jobs their key again where it is free; held keys stay as they are."""
        rows = [
            cls(key=job.unique_lock_key, job=job)
            for job in jobs
            if job.unique_key and _expiry(job, timezone.now()) is None
        ]
        if rows:
            cls.objects.bulk_create(rows, ignore_conflicts=True)

    @classmethod
    def take_for(cls, job: Job, now: datetime) -> int | None:
        """Take the key of ``job`` (an edited job's new key); None when taken, else the id
        of the job holding it. A key whose period is over is taken over."""
        cls.objects.filter(key=job.unique_lock_key, expires_at__lte=now).delete()
        holder = cls.objects.filter(key=job.unique_lock_key).values_list("job_id", flat=True)
        if (held_by := holder.first()) is not None:
            return held_by
        try:
            with db.atomic():  # a savepoint: PostgreSQL's transaction survives the conflict
                cls.objects.create(key=job.unique_lock_key, job=job, expires_at=_expiry(job, now))
        except IntegrityError:  # another enqueue took it since the read
            return holder.first() or -1  # -1: a holder this transaction cannot see yet
        return None

    @classmethod
    def release(cls, job_ids: Iterable[int]) -> None:
        """Free the keys held for their lifetime by the jobs ``job_ids``, which ended for good."""
        cls.objects.filter(job_id__in=list(job_ids), expires_at__isnull=True).delete()


def _expiry(job: Job, now: datetime) -> datetime | None:
    declaration = uniqueness.unique_for(job.task_path)
    if declaration is None or declaration.period is None:
        return None
    return now + declaration.period
