"""Open-loop load: jobs enqueued at a fixed rate from their own process, not a backlog.

    python -m bench.pacer celery|rq|steady_queue --rate 200 --count 2000
    python -m bench.pacer ... --start T --producers 2 --producer 0   # and --producer 1

Job ``i`` is due at ``start + i / rate`` whatever happened to the jobs before it (an
open loop: a slow consumer does not slow the producer down). Each job carries its due
time and the time its enqueue call began, and records both with the time it starts
(bench/sink.py): its latency counts from when it was due (a producer that falls behind
its schedule shows as latency, not as fewer samples: no coordinated omission) and from
its enqueue call (the pickup itself). One job due at 0
comes first, off the schedule: it opens the connection (readers skip it). Prints how far behind
its schedule the pacer itself fell at worst, in seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path


def pace(
    rate: float,
    count: int,
    send: Callable[[float], object],
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], object] = time.sleep,
    start: float | None = None,
    producers: int = 1,
    producer: int = 0,
) -> float:
    """Call ``send(due)`` for the jobs of a schedule of ``count`` jobs at ``rate`` per
    second from ``start`` (default: now), job i due at ``start + i / rate``: all of them,
    or with several ``producers`` (processes) sharing the schedule, every
    ``producers``-th from job ``producer`` on. Return the worst lateness of a call
    (seconds after its due time that it was made)."""
    if rate <= 0 or count < 0:
        raise ValueError("pace needs a positive rate and a count >= 0")
    if not 0 <= producer < producers:
        raise ValueError("producer must be between 0 and producers - 1")
    start = clock() if start is None else start
    worst = 0.0
    for i in range(producer, count, producers):
        due = start + i / rate
        if (ahead := due - clock()) > 0:
            sleep(ahead)
        worst = max(worst, clock() - due)
        send(due)
    return worst


def percentile(samples: list[float], p: float) -> float:
    """The ``p``-th percentile by nearest rank: a value that occurred, never interpolated."""
    if not samples:
        raise ValueError("no samples")
    if not 0 <= p <= 100:
        raise ValueError("a percentile is between 0 and 100")
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil(n * p / 100), at least 1
    return ordered[int(rank) - 1]


def _sender(target: str) -> Callable[[float], object]:
    url = os.environ.get("SQ_BENCH_REDIS_URL", "redis://127.0.0.1:6399/0")
    if target == "celery":
        from bench.celery_app import stamp

        return lambda due: stamp.apply_async((due, time.time()))
    if target == "rq":
        from redis import Redis
        from rq import Queue

        from bench.rq_jobs import stamp

        queue = Queue("bench", connection=Redis.from_url(url))
        return lambda due: queue.enqueue(stamp, due, time.time())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.broker_settings")
    import django

    django.setup()
    from bench.broker_tasks import stamp

    return lambda due: stamp.enqueue(due, time.time())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", choices=["celery", "rq", "steady_queue"])
    parser.add_argument("--rate", type=float, required=True, help="jobs per second")
    parser.add_argument("--count", type=int, required=True, help="jobs of the schedule")
    parser.add_argument("--start", type=float, help="the schedule's start (time.time())")
    parser.add_argument("--producers", type=int, default=1, help="processes sharing it")
    parser.add_argument("--producer", type=int, default=0, help="this one's index")
    options = parser.parse_args()
    send = _sender(options.target)
    send(0.0)  # connect first, off the schedule: a job due at 0, which the reader skips
    worst = pace(
        options.rate,
        options.count,
        send,
        start=options.start,
        producers=options.producers,
        producer=options.producer,
    )
    print(worst, flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
