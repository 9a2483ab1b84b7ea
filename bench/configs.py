"""Worker configurations for ``manage.py steady_queue --config bench.configs.W<P>x<T>``.

``W2x5`` is two worker processes of five threads each, polling all queues (every
0.1 s, the default; ``W2x5p10`` every 10 s); no dispatcher (no job is scheduled).
``W2x3d`` adds one dispatcher with its defaults (what releases throttled jobs).
``W1x2a1000`` gives the worker an event loop with 1,000 slots for async jobs
(``async_concurrency``).
"""

from __future__ import annotations

import re

from steady_queue.configuration import Configuration

NAME = re.compile(r"W(\d+)x(\d+)(?:p(\d+))?(?:a(\d+))?(d)?")


def __getattr__(name: str) -> Configuration.Options:
    match = NAME.fullmatch(name)
    if match is None:
        raise AttributeError(name)
    processes, threads, polling, slots, dispatcher = match.groups()
    worker = Configuration.Worker(
        queues=["*"],
        threads=int(threads),
        processes=int(processes),
        polling_interval=float(polling or 0.1),
        async_concurrency=int(slots) if slots else None,
    )
    dispatchers = [Configuration.Dispatcher()] if dispatcher else []
    return Configuration.Options(workers=[worker], dispatchers=dispatchers)
