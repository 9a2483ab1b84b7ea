"""Workers claim ready jobs and run them on a pool of threads (async ones on an event loop).

Over 300 lines: the main loop's claims and the threads' runs share one set of claim rules.
Its collaborators are beside it: the pool, the async slots, the ledger of claims and
recycling.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Sequence
from datetime import timedelta

import steady_queue

from ... import configuration, storage
from ...configuration import seconds
from ...models import ClaimedExecution, Process
from ...runner import deadlines, live_stack, run_logs
from ...runner.perform import perform_then_claim
from .. import change_watcher, listener, pacing
from ..outages import recover_connections
from ..poller import Poller
from . import abandoned
from .async_claims import is_async_job, sort_claims
from .async_slots import AsyncSlots
from .ledger import Ledger, give_back
from .pool import Pool
from .recycling import WAIT_FOR_IDLE_THREAD, Recycling, resident_memory_mib
from .run_checks import STUCK_CHECK_INTERVAL, Cancellations, StuckThreads
from .unrecorded import end_unrecorded

logger = logging.getLogger("steady_queue.processes")


class Worker(Poller):
    """Claim at most as many ready jobs as there are idle threads, and run them.

    A thread that finishes a job claims its next one with the finish (one statement on
    PostgreSQL, see ``storage.ClaimNext``) and runs it at once: with a backlog, threads
    claim in parallel instead of each waiting for the worker's next poll. Only when
    there is nothing to claim does a thread become idle and wake the worker.

    With ``async_concurrency``, jobs of ``async def`` tasks run on the worker's event
    loop instead (``async_slots``), many at a time, and its claims count the free slots.
    """

    kind = Process.Kind.WORKER

    def __init__(
        self,
        *,
        queues: Sequence[str] = ("*",),
        threads: int = 3,
        polling_interval: float | timedelta = 0.1,
        recycle_after_jobs: int | None = None,
        recycle_above_memory: int | None = None,
        async_concurrency: int | None = None,
    ):
        super().__init__(polling_interval=polling_interval)
        self.queues = list(queues)
        self.threads = threads
        self.pool = Pool(threads, on_idle=self.wake_up, name=self.name)
        slots = AsyncSlots.of(async_concurrency, on_end=self._async_ended, name=self.name)
        self.async_slots = slots
        self._claim_failed = False
        self.listener: listener.Listener | None = None
        self.watcher: change_watcher.ChangeWatcher | None = None
        # Until on_boot knows what wakes this worker: every polling_interval.
        self.pacing: pacing.Fixed = pacing.Fixed(self.polling_interval)
        # Jobs run (finished) so far, and how many of them the pacing has seen.
        self._lock = threading.Lock()
        self.jobs_run = 0
        self._jobs_paced = 0
        self._stuck = StuckThreads()
        self._cancellations = Cancellations()
        self._log_flushes = run_logs.Flushes()
        self._stack_checks = live_stack.StackChecks()
        self.recycling = Recycling(
            after_jobs=recycle_after_jobs, above_memory=recycle_above_memory, owner=self
        )
        self.ledger = Ledger(self.recycling)
        # Set by the supervisor when this worker replaces a recycled one: why, and when.
        self.replaced: dict | None = None

    @classmethod
    def from_configuration(cls, config: configuration.Worker) -> Worker:
        return cls(
            queues=config.queues,
            threads=config.threads,
            polling_interval=config.polling_interval,
            recycle_after_jobs=config.recycle_after_jobs,
            recycle_above_memory=config.recycle_above_memory,
            async_concurrency=config.async_concurrency,
        )

    def metadata(self) -> dict:
        found = {**super().metadata(), "queues": self.queues, "threads": self.threads}
        if self.async_slots is not None:
            found["async_concurrency"] = self.async_slots.size
        found.update(self.recycling.metadata())
        if self.replaced is not None:
            found["replaced"] = self.replaced
        return found

    def live_metadata(self) -> dict:
        """Also how many jobs this worker ran and its resident memory, for the dashboard."""
        found = {
            **self.metadata(),
            "jobs_run": self.jobs_run,
            "memory_mib": round(resident_memory_mib()),
        }
        if self.recycling.reason is not None:
            found["recycling"] = self.recycling.reason
        if self.async_slots is not None:
            found["async_running"] = self.async_slots.size - self.async_slots.free_slots
        return found

    @property
    def running_job_ids(self) -> set[int]:
        """Ids of the jobs claimed for the pool (or the loop) and not finished yet."""
        return self.ledger.running()

    def on_boot(self) -> None:
        run_logs.install()
        self.pool.start()
        if self.async_slots is not None:
            self.async_slots.start()
        abandoned.listen(self)
        self.listener = listener.start_for_worker(self)
        if self.listener is None:
            self.watcher = change_watcher.start_for_worker(self)
        self.pacing = pacing.choose(
            self.polling_interval,
            notified=self.listener is not None,
            signalled=self.watcher is not None,
            idle_polling_interval=storage.for_alias().idle_polling_interval,
        )

    def poll(self) -> float:
        delay = self._poll()
        if running := self.running_job_ids:
            delay = min(delay, self._cancellations.check(running))
            delay = min(delay, self._watch_runs(running))
        if self._stuck:
            self._check_stuck_threads()
            delay = min(delay, STUCK_CHECK_INTERVAL)
        return delay

    def _poll(self) -> float:
        if self.recycling.due():
            return self._recycle_when_idle()
        async_room = self.async_slots.claim_room() if self.async_slots is not None else 0
        wanted = self.ledger.reserve(self.pool.idle_threads + async_room)
        if wanted == 0:
            slots, wait = self.async_slots, WAIT_FOR_IDLE_THREAD
            return wait if slots is None else slots.probe_delay(wait)
        try:
            claimed = self._claim(wanted)
            if not self._may_start(claimed):  # these jobs never started
                give_back(self.process, [execution.job_id for execution in claimed])
                return 0
            self._hand_out(claimed)
        finally:
            self.ledger.unreserve()
        delay = self.pacing.after_poll(len(claimed) + self._jobs_run_since_last_poll())
        return 0 if len(claimed) == wanted else delay

    def _watch_runs(self, running: set[int]) -> float:
        """Write the running jobs' log lines, answer their stack requests; the next time."""
        return min(self._log_flushes.due(), self._stack_checks.check(running))

    def on_shutdown(self) -> None:
        listener.stop(self.listener)
        change_watcher.stop(self.watcher)
        self.pool.shutdown()
        if not self.quitting:
            self._wait_for_running_jobs(seconds(steady_queue.shutdown_timeout))
        unfinished = self.running_job_ids
        if unfinished:
            logger.warning(
                "%s stops with jobs %s unfinished%s",
                self,
                sorted(unfinished),
                "" if self.orphaned else "; they go back to the queue",
            )
        if self.async_slots is not None:
            self.async_slots.shutdown()
        if not self.orphaned:  # an orphan's claims stay for the orphan sweep
            self.ledger.fail_kept(self.process, self)
        if not unfinished:
            self.pool.join(timeout=1.0)
            if self.async_slots is not None:
                self.async_slots.join(timeout=1.0)
        self.ledger.end_held()
        abandoned.forget(self)

    def _hand_out(self, claimed: list[ClaimedExecution]) -> None:
        """Give each claimed job a free slot of the loop (async) or an idle thread.

        Jobs of sync tasks beyond the idle threads (claimed for the loop's free slots)
        go back to the queue at once: they must not wait behind busy threads.
        """
        idle = self.pool.idle_threads
        to_loop, to_threads, surplus = sort_claims(claimed, idle, self.async_slots)
        self.ledger.started([execution.job_id for execution in [*to_loop, *to_threads]])
        for execution in to_loop:
            if not self.async_slots.submit(execution):  # a thread's hand-off took the slot
                to_threads.append(execution)
        for execution in to_threads:
            self.pool.submit(functools.partial(self._run, execution))
        try:
            give_back(self.process, [execution.job_id for execution in surplus])
        except Exception:
            self._claim_failed = True  # the next poll gives back what this worker does not run
            raise

    def _run(self, claimed: ClaimedExecution | None) -> None:
        """Run ``claimed``, then each job its thread claims after it (an async one: the loop's)."""
        while claimed is not None:
            claimed = self._run_one(claimed)
            slots = self.async_slots
            if claimed is not None and slots and is_async_job(claimed) and slots.submit(claimed):
                return

    def _async_ended(
        self, claimed: ClaimedExecution, finished: storage.Finished | None, worth_a_poll: bool
    ) -> None:
        """An async job left its slot: count it; wake the worker if slots are to be filled."""
        self._count_job()
        self.ledger.ended(claimed.job_id, recorded=finished is not None)
        if worth_a_poll or self.recycling.reason is not None:
            self.wake_up()  # to claim for the free slots, or to go once the last job ended

    def _run_one(self, claimed: ClaimedExecution) -> ClaimedExecution | None:
        """Run one job, have its finish claim the next; return that job (None: go idle)."""
        counted: list[bool] = []  # whether this thread is counted as claiming in the ledger

        def allowed() -> bool:
            # A thread given up on (it ran past a timeout) takes no further job.
            mine = not self.pool.is_abandoned()
            counted.append(mine and self._may_claim() and self.ledger.start_claiming())
            return counted[-1]

        then_claim = storage.ClaimNext(self.queues, self.process, allowed=allowed)
        following = None
        try:
            finished = perform_then_claim(claimed, then_claim)
            if finished.claim_failed:
                self._claim_failed = True  # the next poll releases what it may have claimed
            elif finished.claimed and not self._may_start(finished.claimed):
                give_back(self.process, [finished.claimed[0].job_id])
            elif finished.claimed:
                following = finished.claimed[0]
        except BaseException as exc:
            # perform() ends the job with whatever its task raised; this is about recording it.
            if any(counted):
                self._claim_failed = True
            if not end_unrecorded(claimed, exc, self.name):
                self.ledger.keep(claimed.job_id)
        finally:
            recover_connections()
            self._count_job()
            self.ledger.ended(claimed.job_id, following=following, was_claiming=any(counted))
            if self.recycling.reason is not None:
                self.wake_up()  # perhaps the last running job: time to go
        return following

    def _jobs_run_since_last_poll(self) -> int:
        """Jobs this worker's threads ran since the last poll: activity, like a claim."""
        with self._lock:
            ran, self._jobs_paced = self.jobs_run - self._jobs_paced, self.jobs_run
        return ran

    def _abandoned(self, thread: int, run: deadlines.Run) -> None:
        """A job's thread (or the loop) is stuck past its timeout: replace it, carry on.

        A thread's job keeps its claim (``run.held``) until the thread stops: recycling
        then waits for the worker's other jobs only, and ends it as the worker exits.
        """
        slots = self.async_slots
        if self.pool.abandon(thread) or (slots is not None and slots.abandon(run)):
            self.ledger.given_up(run)
            self._stuck.add(thread)
            self.wake_up()

    def _claim(self, wanted: int) -> list[ClaimedExecution]:
        if self._claim_failed:
            self.ledger.release_lost(self.process, self)
        try:
            claimed = storage.claim(self.queues, wanted, self.process)
        except Exception:
            self._claim_failed = True
            raise
        self._claim_failed = False
        return claimed

    def _may_claim(self) -> bool:
        return (
            not self.stopping
            and not self.recycling.due()
            and not self._claim_failed
            and self.still_registered()
        )

    def _may_start(self, claimed: list[ClaimedExecution]) -> bool:
        """Whether to run jobs just claimed: not if a stop, or a prune, came meanwhile.

        Frozen between its claim and now, this process may have been pruned and these
        jobs failed: it must not run them late. (Once its row is gone, claims are refused.)
        """
        return not claimed or (self.still_registered() and not self.stopping)

    def _wait_for_running_jobs(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.running_job_ids and not self.quitting:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.interruptible_sleep(min(remaining, 1.0))

    # Recycling

    def _count_job(self) -> None:
        """Count a job run; past a recycling bound, the worker claims no more."""
        with self._lock:
            self.jobs_run += 1
        self.recycling.due()

    def _check_stuck_threads(self) -> None:
        """Recycle once a given-up thread (or the loop) has been stuck for ``timeout_grace``."""
        alive = {thread.ident for thread in self.pool.stuck_threads()}
        if self.async_slots is not None and self.async_slots.stuck():
            alive.add(self.async_slots.thread_id)
        if self._stuck.past_grace(alive):
            self.recycling.stuck(seconds(steady_queue.timeout_grace))

    def _recycle_when_idle(self) -> float:
        """Once the running jobs have finished, stop with the exit status of recycling."""
        if self.running_job_ids:
            return WAIT_FOR_IDLE_THREAD  # a finishing job wakes the worker
        self.exit_status = self.recycling.exit_status
        self.stop()
        return 0
