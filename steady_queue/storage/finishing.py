"""How a fast storage finishes a job: the steps every database shares, around its statements.

``Storage.finish`` picks one of three ways. The portable finish (``ClaimedExecution.record``
in a transaction of the ORM) takes every outcome a fast storage does not write itself.
The two others run the storage's own statements inside ``record``'s ``write``:

- a concurrency-limited job's success whose thread claims one more (``finish_handing_on``):
  the storage's ``write_hand_on`` records it and passes the slot to the key's next
  blocked job, claimed for the thread; when the slot goes back instead, the thread
  claims from ready as usual;
- any other plain success (``SuccessFinish``): the storage's ``write_success`` records
  it and claims the thread's next job along where its statement can, and a worker
  thread's finish may share ``write_group`` with its neighbours' (``finish_group``).

Both ask ``then_claim.allowed()`` once, before the statement that would claim, and a
write retried after a failure (``record`` retries transient errors) only finishes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .finish_group import Finishing, Shape, claimed_along, shape_of

if TYPE_CHECKING:
    from ..models import ClaimedExecution
    from ..models.attempt import Attempt
    from ..models.execution.claimed_finish import Success
    from .base import ClaimNext, Finished, Storage


def finish_handing_on(
    storage: Storage, claimed: ClaimedExecution, outcome: Success, then_claim: ClaimNext
) -> Finished:
    """Record ``outcome`` and pass the slot to the next blocked job, claimed for the thread."""
    from .base import Finished

    if not then_claim.allowed():  # asked once, before the statement that would claim
        return Finished(claimed.record(outcome))  # the portable finish: the job goes to ready
    following: ClaimedExecution | None = None

    def write(attempt: Attempt) -> bool:
        nonlocal following
        following = None  # a retried write starts again
        recorded, following = storage.write_hand_on(
            claimed, attempt, outcome.return_value, then_claim
        )
        return recorded

    recorded = claimed.record(outcome, write=write)
    if following is not None:
        return Finished(recorded, [following])
    claimed_next, failed = storage.claim_next(then_claim, allowed=True)
    return Finished(recorded, claimed_next, failed)


class SuccessFinish:
    """A plain success written by the storage, with the thread's next claim where it can."""

    def __init__(
        self,
        storage: Storage,
        claimed: ClaimedExecution,
        outcome: Success,
        then_claim: ClaimNext | None,
    ):
        self.storage, self.claimed, self.outcome = storage, claimed, outcome
        self.then_claim = then_claim
        #: What the storage's statement claims along (None: a statement of its own, after).
        self.along = storage.claims_along(then_claim)
        self.shape = _shape(claimed, then_claim, self.along)
        #: along.allowed()'s one answer (None: not asked yet).
        self.asks: bool | None = None
        #: What the statement that recorded the outcome claimed (None: nothing, or it failed).
        self.made: list[ClaimedExecution] | None = None

    def finish(self) -> Finished:
        """Record the success, then say what was claimed (``Storage.finish``)."""
        from .base import Finished

        recorded = self.claimed.record(self.outcome, write=self.write)
        if self.along is None:
            claimed_next, failed = self.storage.claim_next(self.then_claim)
            return Finished(recorded, claimed_next, failed)
        if self.asks:
            # Claimed, or failed to (it may have claimed all the same: the worker's next
            # poll releases what it holds).
            return Finished(recorded, self.made, claim_failed=self.made is None)
        return Finished(recorded)

    def write(self, attempt: Attempt) -> bool:
        """``record``'s write: the success alone, or in its group; whether it was ours."""
        values = self.storage.success_values(self.claimed, attempt, self.outcome.return_value)
        if self.asks is not None:  # retried after a failure: finish only, alone
            return self.storage.write_success(self.claimed, values, None)[0]
        self.asks = self.along is not None and self.along.allowed()
        along = self.along if self.asks else None
        entry = Finishing(
            self.claimed.job_id,
            *values,
            claims=self.asks,
            alone=lambda: self.storage.write_success(self.claimed, values, along),
        )
        recorded, claimed_next = self.storage.finish_groups.finish(self.shape, entry)
        if self.asks:
            self.made = claimed_next
        return recorded


def _shape(claimed: ClaimedExecution, then_claim: ClaimNext | None, along: Any) -> Shape | None:
    """The group a finish joins (None: written alone).

    A finish whose own statement claims what a group's could not (more than one job, or
    wildcards: SQLite's transaction claims anything) is written alone, claim included.
    """
    grouped = claimed_along(then_claim)
    shape = shape_of(claimed, then_claim, grouped)
    return None if along is not grouped else shape
