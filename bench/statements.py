"""Count the statements other processes send through Django, as bench/throttled.py does.

A process started with ``SQ_BENCH_COUNT_PORT`` in its environment (read by
bench/settings.py) wraps each of its database connections and sends one UDP datagram
per statement, ``"<pid> <verb>"``, to that port on this machine, where a ``Counter``
adds them up. BEGIN and COMMIT are not statements Django sends through a cursor, so
they are not counted here; the database's own counters see them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections import Counter as Tally

ADDRESS = "127.0.0.1"


def send_to(port: int) -> None:
    """Count every statement this process's connections send at ``port`` (from settings)."""
    from django.db.backends.signals import connection_created

    def wrap(sender, connection, **kwargs) -> None:
        if not any(isinstance(wrapper, _Sender) for wrapper in connection.execute_wrappers):
            connection.execute_wrappers.append(_Sender(port))

    connection_created.connect(wrap, weak=False)


class _Sender:
    def __init__(self, port: int):
        self.address = (ADDRESS, port)
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def __call__(self, execute, sql, params, many, context):
        verb = (str(sql).split(None, 1) or ["?"])[0].upper()
        with contextlib.suppress(OSError):  # nobody counts any more: the run goes on
            self.socket.sendto(f"{os.getpid()} {verb}".encode(), self.address)
        return execute(sql, params, many, context)


class Counter(threading.Thread):
    """Receive the datagrams and tally them by process id and verb."""

    def __init__(self):
        super().__init__(daemon=True)
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.socket.bind((ADDRESS, 0))
        self.port = self.socket.getsockname()[1]
        self._tally: Tally[tuple[int, str]] = Tally()
        self._lock = threading.Lock()

    def run(self) -> None:
        while True:
            pid, verb = self.socket.recv(256).decode().split(" ", 1)
            with self._lock:
                self._tally[int(pid), verb] += 1

    def snapshot(self) -> Tally[tuple[int, str]]:
        """The statements counted so far, by (process id, verb)."""
        with self._lock:
            return Tally(self._tally)
