"""Which jobs a worker holds a claim for, the claims its threads are making, and giving
back the claims it should not keep.

The worker's threads and its main loop share this ledger: every change is made under
its lock, and the jobs started are counted into the worker's ``Recycling`` under it too,
so that with ``recycle_after_jobs`` the claims made never pass the bound.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from ...models import ClaimedExecution, Process
from ...models.execution.claimed_finish import OutcomeNotRecorded
from ...runner import deadlines
from .recycling import Recycling

logger = logging.getLogger("steady_queue.processes")


class Ledger:
    """The jobs a worker runs, keeps, or holds for a thread given up on; and its claims."""

    def __init__(self, recycling: Recycling):
        self.recycling = recycling
        self._lock = threading.Lock()
        self._claims = threading.Condition(self._lock)
        # Jobs claimed and not finished yet.
        self._running: set[int] = set()
        # Jobs whose outcome neither their run nor end_unrecorded could record: still
        # claimed, and never given back by this worker (a prune or the crash path fails them).
        self._kept: set[int] = set()
        # Runs whose stuck thread was given up while their job keeps its claim (its slot
        # held, no retry due): they end when the thread stops, or as the worker exits.
        self._held: dict[int, deadlines.Run] = {}
        # Threads claiming their next job now, and claims the main loop is making.
        self._claiming = 0
        self._reserved = 0
        self._paused = False

    def running(self) -> set[int]:
        """Ids of the jobs claimed for the pool (or the loop) and not finished yet."""
        with self._lock:
            return set(self._running)

    def reserve(self, room: int) -> int:
        """How many jobs the main loop may claim now, set aside against the bound."""
        with self._lock:
            left = self.recycling.left(self._claiming + self._reserved)
            self._reserved = room if left is None else max(0, min(room, left))
            return self._reserved

    def unreserve(self) -> None:
        """The main loop's claim is over: what it claimed is started, or given back."""
        with self._lock:
            self._reserved = 0

    def start_claiming(self) -> bool:
        """Whether a thread may claim its next job; if so, it is counted until ``ended``."""
        with self._claims:
            left = self.recycling.left(self._claiming + self._reserved)
            if self._paused or (left is not None and left <= 0):
                return False
            self._claiming += 1
            return True

    def started(self, job_ids: list[int]) -> None:
        """Jobs handed to threads or to the loop."""
        with self._lock:
            self._running.update(job_ids)
            self.recycling.count(len(job_ids))

    def ended(
        self,
        job_id: int,
        *,
        recorded: bool = True,
        following: ClaimedExecution | None = None,
        was_claiming: bool = False,
    ) -> None:
        """A job's run is over; ``following`` is the job its thread claimed with the finish."""
        with self._claims:
            self._running.discard(job_id)
            self._held.pop(job_id, None)
            if not recorded:  # its outcome was not recorded: the claim may be left
                self._kept.add(job_id)
            if following is not None:
                self._running.add(following.job_id)
                self.recycling.count()
            if was_claiming:
                self._claiming -= 1
                self._claims.notify_all()

    def keep(self, job_id: int) -> None:
        """The outcome of this job could not be recorded: its claim is never given back."""
        with self._lock:
            self._kept.add(job_id)

    def given_up(self, run: deadlines.Run) -> None:
        """The thread (or loop) running ``run`` was given up on; a held job stays ours."""
        with self._lock:
            self._running.discard(run.claimed.job_id)
            if run.held and not run.ended.is_set():
                self._held[run.claimed.job_id] = run

    @contextlib.contextmanager
    def no_new_claims(self) -> Iterator[None]:
        """Keep threads from claiming their next job, once the claims in flight are recorded.

        Inside, every job the worker holds a claim for is in ``running()``.
        """
        with self._claims:
            self._paused = True
            self._claims.wait_for(lambda: self._claiming == 0)
        try:
            yield
        finally:
            with self._claims:
                self._paused = False

    def release_lost(self, process: Process, owner: object) -> None:
        """Give back the claims of ``process`` this ledger does not know of.

        A claim whose commit succeeded although the connection failed before we heard of
        it would otherwise stay claimed, unrun, until the worker stops.
        """
        with self.no_new_claims():
            mine = ClaimedExecution.objects.filter(process_id=process.pk)
            with self._lock:
                ours = self._running | set(self._held) | self._kept
            lost = mine.exclude(job_id__in=ours)
            if released := ClaimedExecution.release_all(lost):
                logger.warning("%s released %d claimed jobs it had lost track of", owner, released)

    def fail_kept(self, process: Process, owner: object) -> None:
        """Fail the jobs still claimed whose outcome was not recorded: deregistering
        would give them back to ready, and they ran (or began) already."""
        with self._lock:
            kept = set(self._kept)
        if not kept:
            return
        mine = ClaimedExecution.objects.filter(process_id=process.pk, job_id__in=kept)
        error = OutcomeNotRecorded(f"{owner} stopped before the outcome could be recorded")
        try:
            ClaimedExecution.fail_all_with(mine, error)
        except Exception:
            logger.exception("%s could not fail jobs %s; a prune will", owner, sorted(kept))

    def end_held(self) -> None:
        """Fail the jobs of given-up threads still stuck: the process exits right after."""
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for run in held:
            try:
                deadlines.end_for(run)
            except Exception:
                logger.exception("Could not end job %s, stuck past its timeout", run.claimed.job_id)


def give_back(process: Process, job_ids: list[int]) -> None:
    """Release claims of ``process`` whose jobs it will not run: back to ready."""
    if job_ids:
        mine = ClaimedExecution.objects.filter(process_id=process.pk, job_id__in=job_ids)
        ClaimedExecution.release_all(mine)
