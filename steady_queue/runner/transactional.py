"""A ``@transactional`` task's run: its body and its success in one transaction.

``perform`` calls every task inside its run's ``Transaction`` (``around``) and hands it
the outcome before the block ends (``keep``). For a task declared ``@transactional``
(``task_options/transactional.py``) the block is an atomic block on the queue database,
opened once the run is admitted, after checking that the task's jobs live in the database
it writes to; a success is recorded inside it (``ClaimedExecution.record_within``: the
ORM's finish, never a storage's own statement, which would commit apart, nor a next
claim made in the transaction), so the body's writes and the job's completion commit
together. Any other end rolls the whole block back, the body's writes with it: the body
raised or timed out, the run was cancelled, the claim was lost, the success could not
be stored, the commit failed. The run then records its outcome after the block, in a
transaction of its own, as every run does: one failed attempt. A commit that failed
after the server committed finds the claim gone then, and changes nothing.

The body's last log lines are written once the block has ended (``after_transaction``),
so that a failed run keeps them. For any other task the block is nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import transaction

from .. import db, storage
from ..models import ClaimedExecution
from ..models.execution.claimed_finish import Outcome, Success
from ..task_options import transactional


class Transaction:
    """The transaction a run's call and its success share, if its task is transactional."""

    def __init__(self, claimed: ClaimedExecution, then_claim: storage.ClaimNext | None = None):
        self.claimed, self.then_claim = claimed, then_claim
        self.declaration: transactional.Transactional | None = None
        #: Whether the success was recorded inside the block, which then committed.
        self.committed = False

    @contextlib.contextmanager
    def around(self) -> Iterator[Transaction]:
        """The block the task is called in (nothing for a task not transactional)."""
        # Asked once the task was loaded for the run: its module has declared it by then.
        self.declaration = transactional.declared(self.claimed.job.task_path)
        if self.declaration is None:
            yield self
            return
        job = self.claimed.job
        transactional.check_database(job.task_path, self.declaration, db.alias())
        # What recording the success changes of the job in memory, put back if the
        # transaction is rolled back after all: the failure is recorded from it.
        saved = job.attempts, job.finished_at, job.return_value, dict(job._state.fields_cache)
        try:
            with transactional.body() as after:
                try:
                    with db.atomic():
                        yield self
                finally:
                    for callback in after:
                        callback()
        except BaseException:
            self.committed = False
            job.attempts, job.finished_at, job.return_value = saved[:3]
            job._state.fields_cache = saved[3]
            raise

    def keep(self, outcome: Outcome) -> Outcome | None:
        """Inside the block: record a success in it; roll it back for any other outcome.

        Returns the outcome, or None when the claim was lost (nothing to record).
        """
        if self.declaration is None:
            return outcome
        if isinstance(outcome, Success):
            self.committed = self.claimed.record_within(outcome)
            if self.committed:
                return outcome
        transaction.set_rollback(True, using=db.alias())
        return None if isinstance(outcome, Success) else outcome

    def finish(self, outcome: Outcome) -> storage.Finished:
        """Record ``outcome`` the storage's way, unless it committed with the body; then
        claim as the run was asked to (``then_claim``)."""
        store = storage.for_alias()
        if not self.committed:
            return store.finish(self.claimed, outcome, then_claim=self.then_claim)
        claimed_next, failed = store.claim_next(self.then_claim)
        return storage.Finished(True, claimed_next, failed)
