"""How soon ``steady_queue.wait`` returns after a job ends: notified against polling.

    python bench/wait.py                 # PostgreSQL, 50 waits of each kind
    python bench/wait.py --samples 200 --pause 0.2

The real ``manage.py steady_queue`` (one worker process of 3 threads) runs jobs that
pause for ``--pause`` seconds, one at a time; this process enqueues each and waits for
it at once. A sample is the moment ``wait()`` returned minus the job's ``finished_at``
(stamped by the worker just before its finishing statement, so the figure includes
that statement and its commit). The waits take turns: LISTEN/NOTIFY, then polling
(``steady_queue.listen_database = False``: 10 ms doubling to 0.5 s), so that the
machine's drift hits both alike. The database (--name, default sq_bench_wait) is
dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    options = _parse_args()
    os.environ.update(SQ_BENCH_DB="postgres", SQ_BENCH_NAME=options.name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    samples = _measure(options)
    for kind, values in samples.items():
        print(
            f"{kind}: median {statistics.median(values) * 1000:.1f} ms, "
            f"p90 {_percentile(values, 90) * 1000:.1f} ms ({len(values)} samples)"
        )
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="sq_bench_wait")
    parser.add_argument("--samples", type=int, default=50, help="waits of each kind")
    parser.add_argument("--pause", type=float, default=0.1, help="seconds each job runs")
    return parser.parse_args()


def _measure(options: argparse.Namespace) -> dict[str, list[float]]:
    import steady_queue
    from bench import processes
    from bench.tasks import noop, pause
    from steady_queue.models import Process

    samples: dict[str, list[float]] = {"notified": [], "polling": []}
    with processes.running(processes.steady_queue("1x3")):
        _until(lambda: Process.objects.filter(kind="Worker").exists())
        steady_queue.wait(noop.enqueue(), timeout=30)  # the worker's connections are open
        for _ in range(options.samples):
            for kind, listen in (("notified", None), ("polling", False)):
                steady_queue.listen_database = listen
                final = steady_queue.wait(pause.enqueue(options.pause), timeout=30)
                samples[kind].append(time.time() - final.finished_at.timestamp())
        steady_queue.listen_database = None
    # What a waiter does once woken, part of each figure above: read the result.
    samples["reading a finished result"] = [_timed(final.refresh) for _ in range(50)]
    return samples


def _timed(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("the worker did not start")
        time.sleep(0.05)


def _percentile(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(percent / 100 * (len(ordered) - 1)))]


if __name__ == "__main__":
    sys.exit(main())
