"""A Redis- and database-independent record of what ran: one line per job in a file.

Every job of bench/compare_brokers.py (Steady Queue's, Celery's, RQ's) appends a line
here when it runs, so that all of them are counted and timed the same way, and so that
the durability demo counts executions with no help from the broker or the database
that may lose them. Lines are short single ``write()`` calls on a file opened with
O_APPEND: writes of several processes never interleave within a line.
"""

from __future__ import annotations

import os
import time

VARIABLE = "SQ_BENCH_SINK"
_fds: dict[str, int] = {}


def record(*fields: object) -> None:
    """Append ``fields`` and the current time as one line to the file $SQ_BENCH_SINK."""
    path = os.environ[VARIABLE]
    fd = _fds.get(path)
    if fd is None:  # once per process (and per path): opening costs more than writing
        fd = _fds[path] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    line = " ".join(str(field) for field in (*fields, repr(time.time())))
    os.write(fd, (line + "\n").encode())


def lines(path: str) -> list[list[str]]:
    """Every complete line of the sink at ``path``, split into fields."""
    try:
        with open(path) as sink:
            text = sink.read()
    except FileNotFoundError:
        return []
    return [line.split() for line in text.split("\n")[:-1]]


def count(path: str) -> int:
    try:
        with open(path, "rb") as sink:
            return sink.read().count(b"\n")
    except FileNotFoundError:
        return 0
