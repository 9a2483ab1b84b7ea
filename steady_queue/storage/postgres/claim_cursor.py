"""Where a worker's next claim starts on PostgreSQL: just after the last job it claimed.

Each claimed job leaves a dead entry at the head of the ready table's poll index. While
a transaction older than those deletions is open (a report, a psql session, a stuck
request: anything holding back the MVCC horizon) PostgreSQL can neither vacuum those
entries nor mark them dead as scans pass, so a claim from the head of the index steps
over every job claimed since that transaction began: the drain fell to 0.43 of its rate
with a ``REPEATABLE READ`` transaction held 10 minutes (bench/README.md, "A transaction
held 10 minutes while draining").

So each process remembers, per queue database and queue it claims from (``None``: all
queues in one statement), the poll-order key of the last job it claimed (priority, fair
order, job id), and its next claim takes, in one statement (``statements.claiming``):
the jobs of a higher priority than the key's (the head of the index: priorities come first, always),
then the jobs after the key in its priority (a range scan that starts past the dead
entries), and tops up from the head of the index when these were fewer than wanted (the
tail of the queue). Every ``steady_queue.claim_rescan_interval`` the process claims from
the head alone, as it always did (less often when such a claim is slow: ``HEAD_SPACING``).

What that changes: a job of the key's priority whose place is before the key when it
becomes ready (a retry, a scheduled or concurrency-blocked job released, a job skipped
while another worker held it, a fair-share tag below the key) waits for the next claim
from the head: at most ``claim_rescan_interval`` beyond its turn (or ``HEAD_SPACING``
times what a claim from the head takes, when that is longer, up to 30 s), while the
jobs after the key keep the workers busy. Everything else keeps its order: the scan after the key
is the poll order itself. The key is a hint, never a lock or a promise: a stale one
(another thread's, the database emptied) costs one short scan or a claim from the head.
Jobs of ``@fair`` tasks are claimed from the head, always: a key that arrives is tagged
from the smallest tag ready when it is enqueued, which lags the workers' claims (a claim
in flight is still ready to the enqueue), so its jobs could land before the cursor and
wait a whole interval while a backlog's jobs run: the cursor is kept only while the last
job claimed has no tag (``fair_order`` 0, FIFO by id, where every new job lands after it).

What it costs under a held horizon: the claims from the head (one per interval and
process, or one in ``HEAD_SPACING`` of the claiming time), and the jobs of higher
priorities claimed meanwhile, whose dead entries the ``higher`` scan still steps over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

import steady_queue

#: A ready row's place in the poll order (``POLL_ORDER``): priority, fair order, job id.
Key = tuple[int, float, int]
#: The cursor parameters that make the claim start at the head of the index.
FROM_HEAD: list = [None, None, None]
#: A claim from the head that took t seconds is not repeated for ``HEAD_SPACING * t``
#: (when that is longer than ``claim_rescan_interval``): under a horizon held for long,
#: each reads every dead entry (600,000 after 10 minutes at 1,000 jobs/s), and at most
#: one claim in this many turns of a worker's claiming goes to them.
HEAD_SPACING = 20
#: ... and never more than this many seconds apart (a claim stalled by a lock, a pause).
HEAD_SPACING_CAP = 30.0


class ClaimCursors:
    """The last claimed key of this process, per database and queue claimed from, and
    when it may next claim from the head of the index."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[Hashable, Key] = {}
        self._head_due_at: dict[Hashable, float] = {}
        self._head_started_at: dict[Hashable, float] = {}

    def start(self, where: Hashable) -> list:
        """The parameters of the next claim from ``where`` (database alias, queue name or
        None): the key to start after, or ``FROM_HEAD`` (no key yet, the feature off, or
        a claim from the head is due)."""
        interval = steady_queue.claim_rescan_interval
        now = self._clock()
        with self._lock:
            key = self._keys.get(where)
            due = not interval or now >= self._head_due_at.get(where, now)
            if key is None or due:
                if interval:
                    self._head_due_at[where] = now + interval.total_seconds()
                    self._head_started_at[where] = now  # timed until ``advance``
                return list(FROM_HEAD)
            self._head_started_at.pop(where, None)  # a claim from the head that failed
            return list(key)

    def advance(self, where: Hashable, keys: list[Key]) -> None:
        """Move past the last of ``keys`` in the poll order (none claimed, or its place a
        fair-share tag: forget the key), and space the claims from the head by what the
        last one took."""
        with self._lock:
            last = max(keys, key=lambda k: (-k[0], k[1], k[2])) if keys else None
            if last is not None and not last[1]:
                self._keys[where] = last
            else:  # none claimed, or a fair-share tag (FAIR_TAGS_FROM_HEAD)
                self._keys.pop(where, None)
            started = self._head_started_at.pop(where, None)
            if started is not None:
                took = self._clock() - started
                spaced = started + min(HEAD_SPACING * took, HEAD_SPACING_CAP)
                self._head_due_at[where] = max(self._head_due_at.get(where, 0.0), spaced)

    def reset(self) -> None:
        """Forget every key (tests: a new database's jobs are not the old one's)."""
        with self._lock:
            self._keys.clear()
            self._head_due_at.clear()
            self._head_started_at.clear()


#: This process's cursors (each worker process has its own after the fork).
CURSORS = ClaimCursors()
