"""RQ's jobs for bench/compare_brokers.py: the same work as Steady Queue's and Celery's.

Plain functions, importable by ``rq worker`` with no Django set up.
"""

from __future__ import annotations

import time

from bench import sink


def tick(number: int = 0) -> None:
    """A no-op job that leaves a line in the sink (its finish time)."""
    sink.record("tick", number)


def sleep_tick(seconds: float, number: int = 0) -> None:
    """A job of ``seconds`` (5 ms in the benchmark)."""
    time.sleep(seconds)
    sink.record("tick", number)


def stamp(scheduled: float, sent: float = 0.0) -> None:
    """Pickup latency: the pacer's due time, when it called enqueue, and now (the
    job's start)."""
    sink.record("stamp", repr(scheduled), repr(sent))
