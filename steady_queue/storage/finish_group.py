"""Group commit for finishes: the threads of a process that finish at the same moment
share one statement, and one commit, instead of queueing for one each.

A thread that finishes a job while no other thread of its group is writing leads: it
runs the statement for what is waiting, itself included. Threads that finish while a
statement is on its way wait for it and are led in the next one, by the first of them
(it uses its own connection, as every thread does). Nothing waits on purpose: a thread
alone writes at once, a group of one, so an idle worker's latency is unchanged, and a
group grows only while the database is busy with the one before (as PostgreSQL's own
commit grouping does for WAL flushes).

What a statement does is the caller's (``write(entries)``: one result per entry, in
order). If it raises, every entry of the group gets ``WriteAlone``: each thread then
writes its own finish as it would without grouping, so that one job's bad value, or a
deadlock, never fails the others' finishes, and the retries stay each job's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any


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
    """One FinishGroup per key (what the statement's shape depends on), made on first use."""

    def __init__(self, write: Callable[[Hashable, list], list]):
        self._write = write
        self._groups: dict[Hashable, FinishGroup] = {}
        self._lock = threading.Lock()

    def finish(self, key: Hashable, entry: Any) -> Any:
        group = self._groups.get(key)
        if group is None:
            with self._lock:
                group = self._groups.setdefault(
                    key, FinishGroup(lambda entries: self._write(key, entries))
                )
        return group.finish(entry)
