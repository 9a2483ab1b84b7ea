"""The worker's threads: each runs claimed jobs one at a time on its own connection."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .outages import close_connections, recover_connections

if TYPE_CHECKING:
    from ..models import ClaimedExecution
    from ..postgres import NextClaim

logger = logging.getLogger("steady_queue.processes")


class Pool:
    """``size`` daemon threads running claimed jobs; ``on_idle`` is called when one frees up.

    A thread that finishes a job first asks ``claim_next(done)`` for another and runs it
    at once: with a backlog, threads claim in parallel instead of each waiting for the
    worker's next poll. Only when there is nothing to claim does it become idle.
    ``plan_next()`` may return a NextClaim to hand to each job before it runs, so that
    the statement recording its success claims the next one too (PostgreSQL).

    A thread keeps its database connection from job to job (Django connections are
    per thread) and closes it only when broken or when the thread ends. Daemon
    threads let a worker exit on QUIT even while a job is still running.
    """

    def __init__(
        self,
        size: int,
        *,
        on_idle: Callable[[], None],
        name: str = "worker",
        claim_next: Callable[[ClaimedExecution], ClaimedExecution | None] | None = None,
        plan_next: Callable[[], NextClaim | None] | None = None,
    ):
        self.size = size
        self.name = name
        self._on_idle = on_idle
        self._claim_next = claim_next
        self._plan_next = plan_next
        self._queue: queue.SimpleQueue[ClaimedExecution | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._claims = threading.Condition(self._lock)
        self._claiming = 0
        self._claims_paused = False
        self._running: set[int] = set()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for index in range(self.size):
            self._start_thread(index)

    def _start_thread(self, index: int) -> None:
        thread = threading.Thread(
            target=self._work, args=(index,), name=f"{self.name}-{index}", daemon=True
        )
        if index < len(self._threads):
            self._threads[index] = thread
        else:
            self._threads.append(thread)
        thread.start()

    @property
    def idle_threads(self) -> int:
        with self._lock:
            return self.size - len(self._running)

    @property
    def running_job_ids(self) -> set[int]:
        """Ids of the jobs posted and not finished yet."""
        with self._lock:
            return set(self._running)

    def post(self, claimed: ClaimedExecution) -> None:
        with self._lock:
            self._running.add(claimed.job_id)
        self._queue.put(claimed)

    @contextlib.contextmanager
    def claims_paused(self) -> Iterator[None]:
        """Keep threads from claiming their next job, once the claims in flight are recorded.

        Inside, every job this worker holds a claim for is in ``running_job_ids``.
        """
        with self._claims:
            self._claims_paused = True
            self._claims.wait_for(lambda: self._claiming == 0)
        try:
            yield
        finally:
            with self._claims:
                self._claims_paused = False

    def shutdown(self) -> None:
        """Let every thread end once it has finished its current job."""
        for _ in self._threads:
            self._queue.put(None)

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the threads to end (and close their connections)."""
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0))

    def run(self, claimed: ClaimedExecution) -> None:
        """Run ``claimed``, then each job claimed after it, on this thread, while there is one."""
        while claimed is not None:
            self._perform(claimed)
            try:
                claimed = self._next_after(claimed)
            except BaseException:
                with self._claims:  # it runs nothing now: never count it as busy again
                    self._running.discard(claimed.job_id)
                raise

    def _work(self, index: int) -> None:
        stopped = False
        try:
            while (claimed := self._queue.get()) is not None:
                self.run(claimed)
            stopped = True
        except BaseException:
            # Everything a job raises is recorded by perform(); this is the pool's own bug.
            logger.exception("Thread %s-%s failed; starting another", self.name, index)
        finally:
            close_connections()
            if not stopped:  # a worker never runs with fewer threads than it says it has
                self._start_thread(index)

    def _perform(self, claimed: ClaimedExecution) -> None:
        from ..perform import perform

        claimed.successor = self._successor()
        try:
            perform(claimed)
        except BaseException:
            # perform() records the task's own errors; this is about recording them.
            logger.exception("Could not record the outcome of job %s", claimed.job_id)
        finally:
            recover_connections()

    def _next_after(self, done: ClaimedExecution) -> ClaimedExecution | None:
        """Claim this thread's next job; with none, become idle and say so."""
        successor = getattr(done, "successor", None)
        claiming = (successor is not None and successor.made) or self._start_claiming()
        following = self._claim(done) if claiming else None
        with self._claims:
            self._running.discard(done.job_id)
            if following is not None:
                self._running.add(following.job_id)
            if claiming:
                self._claiming -= 1
                self._claims.notify_all()
        if following is None:
            self._on_idle()
        return following

    def _start_claiming(self) -> bool:
        if self._claim_next is None:
            return False
        with self._claims:
            if self._claims_paused:
                return False
            self._claiming += 1
            return True

    def _successor(self) -> NextClaim | None:
        successor = self._plan_next() if self._plan_next is not None else None
        if successor is not None:
            allowed = successor.allowed  # claims paused count as not allowed, like here
            successor.allowed = lambda: allowed() and self._start_claiming()
        return successor

    def _claim(self, done: ClaimedExecution) -> ClaimedExecution | None:
        try:
            return self._claim_next(done)
        except Exception as exc:
            # The worker's own poll retries (and logs the outage); this thread goes idle.
            logger.debug("Could not claim a next job: %s", exc)
            recover_connections()
            return None
