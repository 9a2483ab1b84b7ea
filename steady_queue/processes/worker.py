"""Workers claim ready jobs and run them on a pool of threads."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import timedelta

import steady_queue

from .. import configuration, db, postgres
from ..configuration import seconds
from ..models import ClaimedExecution, Process, ReadyExecution
from . import listener
from .poller import Poller
from .pool import Pool

logger = logging.getLogger("steady_queue.processes")

# With every thread busy there is nothing to poll for: a finishing job wakes the worker.
WAIT_FOR_IDLE_THREAD = 60.0


class Worker(Poller):
    """Claim at most as many ready jobs as there are idle threads, and run them."""

    kind = Process.Kind.WORKER

    def __init__(
        self,
        *,
        queues: Sequence[str] = ("*",),
        threads: int = 3,
        polling_interval: float | timedelta = 0.1,
    ):
        super().__init__(polling_interval=polling_interval)
        self.queues = list(queues)
        self.threads = threads
        self.pool = Pool(
            threads,
            on_idle=self.wake_up,
            name=self.name,
            claim_next=self._claim_next,
            plan_next=self._plan_next,
        )
        self._claim_failed = False
        self.listener: listener.Listener | None = None

    @classmethod
    def from_configuration(cls, config: configuration.Worker) -> Worker:
        return cls(
            queues=config.queues, threads=config.threads, polling_interval=config.polling_interval
        )

    def metadata(self) -> dict:
        return {**super().metadata(), "queues": self.queues, "threads": self.threads}

    def on_boot(self) -> None:
        self.pool.start()
        self.listener = listener.start_for_worker(self)

    def poll(self) -> float:
        wanted = self.pool.idle_threads
        if wanted == 0:
            return WAIT_FOR_IDLE_THREAD
        claimed = self._claim(wanted)
        if not self._may_start(claimed):  # these jobs never started
            self._release([execution.job_id for execution in claimed])
            return 0
        for execution in claimed:
            self.pool.post(execution)
        return 0 if len(claimed) == wanted else self.polling_interval

    def on_shutdown(self) -> None:
        listener.stop(self.listener)
        self.pool.shutdown()
        if not self.quitting:
            self._wait_for_running_jobs(seconds(steady_queue.shutdown_timeout))
        unfinished = self.pool.running_job_ids
        if unfinished:
            logger.warning(
                "%s stops with jobs %s unfinished%s",
                self,
                sorted(unfinished),
                "" if self.orphaned else "; they go back to the queue",
            )
        else:
            self.pool.join(timeout=1.0)

    def _claim(self, wanted: int) -> list[ClaimedExecution]:
        if self._claim_failed:
            self._release_lost_claims()
        try:
            claimed = ReadyExecution.claim(self.queues, wanted, self.process)
        except Exception:
            self._claim_failed = True
            raise
        self._claim_failed = False
        return claimed

    def _claim_next(self, done: ClaimedExecution) -> ClaimedExecution | None:
        """Claim one job for a pool thread that has just finished ``done`` (on that thread)."""
        successor = getattr(done, "successor", None)
        if successor is not None and successor.made:  # claimed along with done's success
            if successor.failed:
                self._claim_failed = True  # the next poll releases what it may have claimed
                return None
            claimed = successor.claimed
        else:
            claimed = self._claim_one()
        if claimed and not self._may_start(claimed):
            self._release([claimed[0].job_id])
            return None
        return claimed[0] if claimed else None

    def _claim_one(self) -> list[ClaimedExecution]:
        if not self._may_claim():
            return []
        try:
            return ReadyExecution.claim(self.queues, 1, self.process)
        except Exception:
            self._claim_failed = True  # the next poll releases what it may have claimed
            raise

    def _plan_next(self) -> postgres.NextClaim | None:
        """Let a job's success claim its thread's next job (PostgreSQL; all or one queue)."""
        if "*" in self.queues:
            queue_name = None  # all queues, unless one is paused: then the poll's way
        elif len(self.queues) == 1 and "*" not in self.queues[0]:
            queue_name = self.queues[0]
        else:
            return None
        if not postgres.in_use():
            return None
        return postgres.NextClaim(queue_name, self.process, allowed=self._may_claim)

    def _may_claim(self) -> bool:
        return not self.stopping and not self._claim_failed and self.still_registered()

    def _may_start(self, claimed: list[ClaimedExecution]) -> bool:
        """Whether to run jobs just claimed: not if a stop, or a prune, came meanwhile.

        Frozen between its claim and now, this process may have been pruned and these
        jobs failed: it must not run them late. (Once its row is gone, claims are refused.)
        """
        return not claimed or (self.still_registered() and not self.stopping)

    def _release_lost_claims(self) -> None:
        # A claim whose commit succeeded although the connection failed before we heard
        # of it would otherwise stay claimed, unrun, until this worker stops.
        with self.pool.claims_paused():
            mine = ClaimedExecution.objects.using(db.alias()).filter(process_id=self.process.pk)
            lost = mine.exclude(job_id__in=self.pool.running_job_ids)
            if released := ClaimedExecution.release_all(lost):
                logger.warning("%s released %d claimed jobs it had lost track of", self, released)

    def _release(self, job_ids: list[int]) -> None:
        if job_ids:
            mine = ClaimedExecution.objects.using(db.alias()).filter(
                process_id=self.process.pk, job_id__in=job_ids
            )
            ClaimedExecution.release_all(mine)

    def _wait_for_running_jobs(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.pool.running_job_ids and not self.quitting:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.interruptible_sleep(min(remaining, 1.0))
