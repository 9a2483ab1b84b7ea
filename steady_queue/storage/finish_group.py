"""Group commit for finishes: the threads of a process that finish at the same moment
share one statement, and one commit, instead of queueing for one each.

A thread that finishes a job while no other thread of its group is writing leads: it
runs the statement for what is waiting, itself included. Threads that finish while a
statement is on its way wait for it and are led in the next one, by the first of them
(it uses its own connection, as every thread does). Nothing waits on purpose: a thread
alone writes at once, a group of one, so an idle worker's latency is unchanged, and a
group grows only while the database is busy with the one before (as PostgreSQL's own
commit grouping does for WAL flushes).

What a statement does is the database's (``Storage.write_group(shape, entries)``: one
result per entry, in order; ``postgres.grouped``, ``mysql.grouped``, ``sqlite.grouped``).
If it raises, every entry of the group gets ``WriteAlone``: each thread then writes its
own finish as it would without grouping, so that one job's bad value, or a deadlock,
never fails the others' finishes, and the retries stay each job's own (a group of one
gets its own error).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from .. import db

if TYPE_CHECKING:
    from ..models import ClaimedExecution, Process
    from .base import ClaimNext


@dataclasses.dataclass(frozen=True)
class Shape:
    """What the finishes of one statement share: whose claims, and what they claim next."""

    process_id: int | None  # the claims' process
    claims: bool  # whether any of them claims (the ones allowed to do)
    queue_name: str | None = None  # None: every queue
    process: Process | None = None  # who claims, registered


@dataclasses.dataclass(frozen=True)
class Finishing:
    """One thread's success: the values its job is marked finished with, and its claim."""

    job_id: int
    finished_at: Any
    return_value: Any  # prepared for the database, as the two below
    attempts: Any  # the attempt to append (PostgreSQL), or all of the job's (MySQL)
    claims: bool  # whether this thread claims its next job
    alone: Callable[[], tuple[bool, list[ClaimedExecution]]]  # its own statement, or script


def claimed_along(then_claim: ClaimNext | None) -> ClaimNext | None:
    """``then_claim`` if a finish's own statement can claim it: one job, of every queue
    or of one queue named exactly (None: the thread claims in a statement of its own).
    """
    if then_claim is None or then_claim.limit != 1:
        return None
    queues = list(then_claim.queues)
    if "*" in queues or (len(queues) == 1 and "*" not in queues[0]):
        return then_claim
    return None


def shape_of(
    claimed: ClaimedExecution, then_claim: ClaimNext | None, along: ClaimNext | None
) -> Shape | None:
    """The shape of a worker thread's finish; None: written alone, as a caller's is.

    ``along``: ``then_claim`` if the statement can claim what it asks (None: the thread
    claims in a statement of its own, after). A finish inside a caller's transaction
    is the caller's: it never writes for other threads.
    """
    if then_claim is None or db.connection().in_atomic_block:
        return None
    if along is None:
        return Shape(claimed.process_id, claims=False)
    queue_name = None if "*" in along.queues else next(iter(along.queues))
    return Shape(claimed.process_id, True, queue_name, along.process)


class WriteAlone(Exception):
    """The group's statement failed: write this entry on its own."""


class _Waiting:
    """An entry, and a lock held until its result is in or its thread is to lead.

    A bare lock is the cheapest way to block a thread until another lets it go (an
    Event builds a Condition, and a lock of its own for each wait, on top of it).
    """

    __slots__ = ("entry", "ready", "result")

    def __init__(self, entry: Any):
        self.entry = entry
        self.result: Any = None
        self.ready = threading.Lock()
        self.ready.acquire()

    def wait(self) -> None:
        self.ready.acquire()

    def wake(self) -> None:
        self.ready.release()


class FinishGroup:
    """Threads' finishes, written together by whichever thread leads (see the module)."""

    def __init__(self, write: Callable[[list], list[Any]]):
        self._write = write
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._writing = False

    def finish(self, entry: Any) -> Any:
        """Write ``entry`` with whatever else is waiting; its result, or raise WriteAlone."""
        mine = _Waiting(entry)
        with self._lock:
            self._waiting.append(mine)
            leads = not self._writing
            self._writing = True
        if not leads:
            mine.wait()
            if mine.result is not None:
                return _result(mine.result)
            # Handed the lead: what waits now is this thread's to write, itself included.
        with self._lock:
            batch, self._waiting = self._waiting, []
        try:
            results = self._write([waiting.entry for waiting in batch])
        except BaseException as exc:
            self._hand_out(batch, [WriteAlone(exc)] * len(batch), mine)
            if len(batch) == 1 or not isinstance(exc, Exception):
                raise  # it wrote alone already; or it is being stopped (the others write alone)
        else:
            self._hand_out(batch, results, mine)
        return _result(mine.result)

    def _hand_out(self, batch: list[_Waiting], results: list[Any], mine: _Waiting) -> None:
        with self._lock:
            if self._waiting:
                self._waiting[0].wake()  # the next leader: its result stays None
            else:
                self._writing = False
        for waiting, result in zip(batch, results, strict=True):
            waiting.result = _Box(result)
            if waiting is not mine:
                waiting.wake()


class _Box:
    """A result, told apart from "not written yet" (None) even when it is None."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def _result(box: _Box) -> Any:
    if isinstance(box.value, WriteAlone):
        raise box.value
    return box.value


class FinishGroups:
    """One FinishGroup per shape (what the statement depends on), made on first use."""

    def __init__(self, write: Callable[[Hashable, list], list]):
        self._write = write
        self._groups: dict[Hashable, FinishGroup] = {}
        self._lock = threading.Lock()

    def finish(self, shape: Shape | None, entry: Finishing) -> Any:
        """Write ``entry`` with the others of its shape (None: alone); its result.

        If the group's statement fails, the entry is written alone (``entry.alone()``).
        """
        if shape is None:
            return entry.alone()
        group = self._groups.get(shape)
        if group is None:
            with self._lock:
                group = self._groups.setdefault(
                    shape, FinishGroup(lambda entries: self._write(shape, entries))
                )
        try:
            return group.finish(entry)
        except WriteAlone:
            return entry.alone()
