"""Jobs in each state for ``steady_queue_dashboard_fill``: rows as the engine leaves them.

A mixin of the fill command (``self.random``, ``self.now``, ``self.windows``): each
builder takes a new job, sets what its state needs on it and returns the rows that go
with it (a failed execution with its error, a claim by one of the workers...).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    Process,
    RateLimitBucket,
    RateLimitSlot,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
    ThrottledExecution,
)
from steady_queue.models.attempt import Attempt
from steady_queue.task_options import rate_limits

ERRORS = [
    ("billing.exceptions.CardDeclined", "Card ending 4242 was declined"),
    ("requests.exceptions.ConnectionError", "Connection refused: api.example.com:443"),
    ("builtins.KeyError", "'account_id'"),
    ("django.db.utils.OperationalError", "deadlock detected"),
    # A fifth of the failed jobs were cancelled before they ran: a status of their own.
    (CANCELLED_CLASS, "cancelled"),
]
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/app/steady_queue/perform.py", line 41, in perform\n'
    "    return_value = _call(task, result, job)\n"
    '  File "/app/billing/tasks.py", line 88, in charge_card\n'
    "    gateway.charge(account, amount)\n"
    "{cls}: {message}\n"
)


class StatesFill:
    def _finished(self, days: int) -> Callable[[Job], list]:
        def build(job: Job) -> list:
            job.finished_at = self.now - timedelta(seconds=self.random.uniform(0, days * 86_400))
            started = job.finished_at - timedelta(milliseconds=self.random.uniform(5, 4_000))
            job.created_at = started - timedelta(seconds=self.random.uniform(0, 30))
            job.attempts = [_attempt(started, job.finished_at)]
            job.return_value = {"ok": True}
            return []

        return build

    def _failed(self, job: Job) -> list:
        cls, message = self.random.choice(ERRORS)
        failed_at = self.now - timedelta(seconds=self.random.uniform(0, 3 * 86_400))
        started = failed_at - timedelta(milliseconds=self.random.uniform(5, 2_000))
        job.created_at = started - timedelta(seconds=self.random.uniform(0, 30))
        cancelled = cls == CANCELLED_CLASS
        traceback = "" if cancelled else TRACEBACK.format(cls=cls, message=message)
        error = {"exception_class": cls, "message": message, "traceback": traceback}
        job.attempts = [] if cancelled else [_attempt(started, failed_at, error)]
        return [
            FailedExecution(job=job, created_at=failed_at, **FailedExecution.error_fields(error))
        ]

    def _scheduled(self, job: Job) -> list:
        job.scheduled_at = self.now + timedelta(seconds=self.random.uniform(-60, 14 * 86_400))
        return [
            ScheduledExecution(
                job=job,
                queue_name=job.queue_name,
                priority=job.priority,
                scheduled_at=job.scheduled_at,
            )
        ]

    def _ready(self, job: Job) -> list:
        return [ReadyExecution(job=job, queue_name=job.queue_name, priority=job.priority)]

    def _blocked(self, job: Job) -> list:
        job.task_path = "billing.tasks.charge_card"
        job.concurrency_key = f"billing.tasks.charge_card/account-{self.random.randrange(100)}"
        Semaphore.objects.get_or_create(
            key=job.concurrency_key, defaults={"value": 0, "expires_at": self.now + _minutes(3)}
        )
        return [
            BlockedExecution(
                job=job,
                queue_name=job.queue_name,
                priority=job.priority,
                concurrency_key=job.concurrency_key,
                expires_at=self.now + _minutes(3),
            )
        ]

    def _throttled(self, job: Job) -> list:
        job.task_path = "sync.tasks.pull_crm_contacts"
        job.rate_limit_key = f"crm-{self.random.randrange(20)}"
        key = rate_limits.bucket_key(job.task_path, job.rate_limit_key)
        if key not in self.windows:
            self._full_window(key, job)
            self.windows.add(key)
        return [
            ThrottledExecution(
                job=job, queue_name=job.queue_name, priority=job.priority, bucket_key=key
            )
        ]

    def _full_window(self, key: str, job: Job) -> None:
        """A window of 10 starts a minute, all taken within the last minute (kept if it exists)."""
        if RateLimitBucket.objects.filter(key=key).exists():
            return
        per = _minutes(1)
        bucket = RateLimitBucket.objects.create(
            key=key,
            task_path=job.task_path,
            limit_key=job.rate_limit_key,
            to=10,
            per=per,
            next_release_at=self.now + timedelta(seconds=self.random.uniform(1, 60)),
            expires_at=self.now + per,
        )
        starts = [self.now - timedelta(seconds=self.random.uniform(0, 59)) for _ in range(10)]
        RateLimitSlot.objects.bulk_create(
            RateLimitSlot(bucket=bucket, started_at=started) for started in starts
        )

    def _claimed(self, workers: list[Process]) -> Callable[[Job], list]:
        def build(job: Job) -> list:
            started = self.now - timedelta(seconds=self.random.uniform(1, 600))
            job.progress = {"current": self.random.randrange(100), "total": 100, "message": ""}
            worker = self.random.choice(workers)
            return [ClaimedExecution(job=job, process=worker, created_at=started)]

        return build


def _attempt(started: datetime, finished: datetime, error: dict | None = None) -> dict:
    return Attempt("worker-0", started, finished, error).to_dict()


def _minutes(n: int) -> timedelta:
    return timedelta(minutes=n)
