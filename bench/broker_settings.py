"""bench/compare_brokers.py: the benchmark's settings, and workers that never LISTEN
when $SQ_BENCH_NO_LISTEN is set (PostgreSQL without NOTIFY: they poll every 0.1 s)."""

import os

from bench.settings import *  # noqa: F403

if os.environ.get("SQ_BENCH_NO_LISTEN"):
    import steady_queue

    steady_queue.listen_database = False
