"""Enqueue jobs of ``@unique`` tasks: a duplicate gets the job that holds its key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone

from ... import db
from ...task_options import uniqueness
from ..label import JobLabel
from ..unique_lock import LostRace, UniqueLock

if TYPE_CHECKING:
    from . import Job

# Each lost race means another enqueue committed the key: the next read sees it.
RACE_ATTEMPTS = 10


class UniqueJobs:
    """The key a job holds, given back where it ends for good; the enqueue that takes it."""

    @property
    def unique_lock_key(self) -> str:
        return uniqueness.lock_key(self.task_path, self.unique_key)

    def release_unique_lock(self) -> None:
        """Free this job's key if it held it for its lifetime: it ended for good."""
        if self.unique_key:
            UniqueLock.release([self.pk])

    @classmethod
    def enqueue_unique(cls, jobs: list[Job]) -> list[Job]:
        """Insert ``jobs`` and their executions, leaving duplicates out; all or nothing.

        Returns, for each of ``jobs``, the job holding its key: itself when inserted, the
        job already in the table, or the first of ``jobs`` with the same key. Duplicates
        write nothing. Constant in queries, whatever the number of jobs.
        """

        def attempt() -> list[Job]:
            return db.retry_deadlocks(lambda: cls._enqueue_unique_once(jobs))

        for _ in range(RACE_ATTEMPTS - 1):
            try:
                return attempt()
            except LostRace:
                # Our transaction (or savepoint) rolled back; in READ COMMITTED (and on
                # SQLite, where writers take turns) the next read sees the winner's key.
                continue
        return attempt()  # the last one raises what it meets

    @classmethod
    def _enqueue_unique_once(cls, jobs: list[Job]) -> list[Job]:
        for job in jobs:  # a retried attempt inserts its rows again
            job.pk, job._state.adding = None, True
        batch = _Batch(jobs)
        with db.atomic():
            now = timezone.now()
            locks = UniqueLock.objects.in_bulk(list(batch.first))
            held = {key: lock.job_id for key, lock in locks.items() if not lock.is_free(now)}
            holders = cls._holders(set(held.values()))
            expired = [key for key in locks if key not in held]
            cls._insert_new(batch.new_jobs(held), expired, now)
        return batch.resolved(held, holders)

    @classmethod
    def _insert_new(cls, jobs: list[Job], expired: list[str], now) -> None:
        if not jobs:
            return  # only duplicates: nothing is written
        cls.objects.bulk_create(jobs)  # first: a lock row points at its job
        JobLabel.insert_for(jobs)
        UniqueLock.take_all([job for job in jobs if job.unique_key], expired, now)
        cls.prepare_all_for_execution(jobs)

    @classmethod
    def _holders(cls, ids: set[int]) -> dict[int, Job]:
        if not ids:
            return {}
        holders = cls.objects.with_execution().in_bulk(ids)
        if len(holders) < len(ids):  # one ended and was deleted since the locks were read
            raise LostRace("A job holding a unique key was deleted meanwhile.")
        return holders


class _Batch:
    """The jobs of one enqueue, grouped by key: the first of each key stands for the rest."""

    def __init__(self, jobs: list[Job]):
        self.jobs = jobs
        self.keys = {id(job): job.unique_lock_key for job in jobs if job.unique_key}
        self.first: dict[str, Job] = {}
        for job in jobs:
            if id(job) in self.keys:
                self.first.setdefault(self.keys[id(job)], job)

    def new_jobs(self, held: dict[str, int]) -> list[Job]:
        """The jobs to insert: those of no key, and the first of each key no job holds."""
        return [job for job in self.jobs if self._is_new(job, held)]

    def resolved(self, held: dict[str, int], holders: dict[int, Job]) -> list[Job]:
        """For each job, the one that holds its key (itself if it has none)."""
        return [self._holder(job, held, holders) for job in self.jobs]

    def _is_new(self, job: Job, held: dict[str, int]) -> bool:
        key = self.keys.get(id(job))
        return key is None or (self.first[key] is job and key not in held)

    def _holder(self, job: Job, held: dict[str, int], holders: dict[int, Job]) -> Job:
        key = self.keys.get(id(job))
        if key is None:
            return job
        return holders[held[key]] if key in held else self.first[key]
