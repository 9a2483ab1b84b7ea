"""Wake a sleeping worker or dispatcher the moment PostgreSQL says there is work (LISTEN).

Enqueue and dispatch send NOTIFY in their transactions (``steady_queue.storage.notify``). Each
worker and dispatcher process runs one Listener thread with its own connection, which
cuts the process's sleep short, so a job starts in milliseconds instead of at the next
poll. Polling stays: on other databases, while the listener reconnects, and for what
sends no notification.

No thundering herd: a worker wakes only for a queue it polls and only while it has an
idle thread, and notifications that arrive together wake it once.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..storage import notify
from .outages import RETRY_INTERVAL, OutageLog

if TYPE_CHECKING:
    from .dispatcher import Dispatcher
    from .worker import Worker

logger = logging.getLogger("steady_queue.processes")

# Scheduled jobs are woken for a little after they are due: the dispatcher compares with
# the wall clock, and waking a hair early would find nothing due yet.
DUE_MARGIN = 0.005
# Far-future wake-ups beyond this many are left to polling.
MAX_ALARMS = 1000


class Listener(threading.Thread):
    """LISTEN on ``channels`` over a dedicated connection and pass each notification on.

    ``on_notify(channel, payload)`` runs on this thread for each notification.
    ``on_connect()`` runs after each (re)connection: what was sent while nobody
    listened is lost, so the owner should poll then. ``alarm(at)`` makes the thread
    call ``on_alarm()`` at ``time.monotonic()`` value ``at``.
    """

    def __init__(
        self,
        *,
        name: str,
        channels: Sequence[str],
        on_notify: Callable[[str, str], None],
        on_connect: Callable[[], None],
        on_alarm: Callable[[], None] | None = None,
    ):
        super().__init__(name=f"{name}-listener", daemon=True)
        self.channels = list(channels)
        self._on_notify, self._on_connect, self._on_alarm = on_notify, on_connect, on_alarm
        self._alarms: list[float] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._connection = None
        self._outage = OutageLog(logger, f"Listening for {', '.join(self.channels)}")
        self._reader, self._writer = os.pipe()
        os.set_blocking(self._writer, False)

    def stop(self, timeout: float = 2.0) -> None:
        """End the thread and close its connection."""
        self._stopped = True
        self._poke()
        if self.is_alive():
            self.join(timeout)
        if not self.is_alive() and self._writer is not None:
            os.close(self._reader)
            os.close(self._writer)
            self._reader = self._writer = None

    def alarm(self, at: float) -> None:
        """Call ``on_alarm()`` at monotonic time ``at``."""
        with self._lock:
            heapq.heappush(self._alarms, at)
            if len(self._alarms) > MAX_ALARMS:
                self._alarms = heapq.nsmallest(MAX_ALARMS, self._alarms)
        self._poke()

    def run(self) -> None:
        try:
            while not self._stopped:
                try:
                    self._listen()
                except Exception as exc:
                    self._outage.failed(exc)
                    self._close()
                    self._wait(RETRY_INTERVAL)
        finally:
            self._close()

    def _listen(self) -> None:
        self._connection = notify.listening_connection()
        statements = "; ".join(f"LISTEN {channel}" for channel in self.channels)
        self._connection.execute(statements)
        self._outage.succeeded()
        self._on_connect()
        while not self._stopped:
            if self._wait(self._until_next_alarm()):
                self._read_notifications()
            self._ring_due_alarms()

    def _wait(self, timeout: float | None) -> bool:
        """Wait for the connection or a poke; return whether the connection has input."""
        watched = [self._reader]
        if self._connection is not None:
            watched.append(self._connection.fileno())
        readable, _, _ = select.select(watched, [], [], timeout)
        if self._reader in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(self._reader, 512)
        return len(watched) > 1 and watched[1] in readable

    def _read_notifications(self) -> None:
        from psycopg import pq

        pgconn = self._connection.pgconn
        pgconn.consume_input()
        if pgconn.status != pq.ConnStatus.OK:
            raise ConnectionError("the listening connection was closed")
        while (notification := pgconn.notifies()) is not None:
            self._on_notify(notification.relname.decode(), notification.extra.decode())

    def _until_next_alarm(self) -> float | None:
        with self._lock:
            return max(self._alarms[0] - time.monotonic(), 0) if self._alarms else None

    def _ring_due_alarms(self) -> None:
        now, due = time.monotonic(), False
        with self._lock:
            while self._alarms and self._alarms[0] <= now:
                heapq.heappop(self._alarms)
                due = True
        if due and self._on_alarm is not None:
            self._on_alarm()

    def _poke(self) -> None:
        # A full pipe already holds a poke.
        with contextlib.suppress(BlockingIOError):
            os.write(self._writer, b".")

    def _close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None


def start_for_worker(worker: Worker) -> Listener | None:
    """Start a listener for ``worker`` where the database can notify; None elsewhere."""
    return _started(for_worker(worker))


def start_for_dispatcher(dispatcher: Dispatcher) -> Listener | None:
    """Start a listener for ``dispatcher`` where the database can notify; None elsewhere."""
    return _started(for_dispatcher(dispatcher))


def stop(listener: Listener | None) -> None:
    """Stop ``listener`` if there is one."""
    if listener is not None:
        listener.stop()


def for_worker(worker: Worker) -> Listener | None:
    """A listener that wakes ``worker`` for ready jobs of its queues; None without NOTIFY."""
    if not notify.can_listen():
        return None

    def on_notify(channel: str, queue_name: str) -> None:
        if wants(worker.queues, queue_name) and worker.pool.idle_threads > 0:
            worker.wake_up()

    return Listener(
        name=worker.name,
        channels=[notify.READY_CHANNEL],
        on_notify=on_notify,
        on_connect=worker.wake_up,
    )


def for_dispatcher(dispatcher: Dispatcher) -> Listener | None:
    """A listener that wakes ``dispatcher`` when a scheduled job comes due; None without NOTIFY."""
    if not notify.can_listen():
        return None
    listener: Listener

    def on_notify(channel: str, due_at: str) -> None:
        with contextlib.suppress(ValueError):
            delay = float(due_at) - time.time() + DUE_MARGIN
            listener.alarm(time.monotonic() + max(delay, 0))

    listener = Listener(
        name=dispatcher.name,
        channels=[notify.SCHEDULED_CHANNEL],
        on_notify=on_notify,
        on_connect=dispatcher.wake_up,
        on_alarm=dispatcher.wake_up,
    )
    return listener


def wants(queues: Sequence[str], queue_name: str) -> bool:
    """Whether a worker polling ``queues`` may claim jobs notified for ``queue_name``."""
    if queue_name == notify.ANY_QUEUE:
        return True
    return any(
        entry == queue_name or (entry.endswith("*") and queue_name.startswith(entry[:-1]))
        for entry in queues
    )


def _started(listener: Listener | None) -> Listener | None:
    if listener is not None:
        listener.start()
    return listener
