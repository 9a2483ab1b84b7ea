"""What an idle worker sends to the database: statements per second while nothing happens.

    python bench/idle.py --db mysql
    python bench/idle.py --db sqlite --seconds 30

The real ``manage.py steady_queue`` runs one worker process of three threads with the
default polling interval (0.1 s) and no dispatcher. It runs one job (so that every
connection is open and the worker has just been active), then nothing is enqueued:
after ``--settle`` seconds the statements each process sends through Django are
counted for ``--seconds`` (bench/statements.py: BEGIN and COMMIT are not counted, nor
MySQL's autocommit switches, which are no statements of a cursor). Heartbeats run at
their default pace (every 60 s). The database (--name, default sq_bench_idle) is
dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    options = _parse_args()
    os.environ.update(SQ_BENCH_DB=options.db, SQ_BENCH_NAME=options.name)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    from bench import statements, system

    counter = statements.Counter()
    counter.start()
    # Read by bench/settings.py in the supervisor's processes only: this one is not counted.
    os.environ["SQ_BENCH_COUNT_PORT"] = str(counter.port)
    print(f"{system.description()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    sent, worker = _count(options, counter)
    mine = Counter({verb: count for (pid, verb), count in sent.items() if pid == worker})
    others = sum(count for (pid, _), count in sent.items() if pid != worker)
    print(
        f"idle worker (1x3, polling_interval 0.1 s), {options.seconds:.0f} s after "
        f"{options.settle:.0f} s of rest: {mine.total() / options.seconds:.2f} statements/s "
        f"({', '.join(f'{verb} {count}' for verb, count in mine.most_common())}); "
        f"the supervisor: {others / options.seconds:.2f} statements/s"
    )
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="sqlite")
    parser.add_argument("--name", default="sq_bench_idle")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to count")
    parser.add_argument("--settle", type=float, default=2.0, help="rest before counting")
    return parser.parse_args()


def _count(options: argparse.Namespace, counter) -> tuple[Counter, int]:
    """The statements sent while idle, by (process id, verb); and the worker's process id."""
    from bench import processes
    from bench.tasks import noop
    from steady_queue.models import Job, Process

    with processes.running(processes.steady_queue("1x3")):
        _until(lambda: Process.objects.filter(kind="Worker").exists())
        job = noop.enqueue()
        _until(lambda: Job.objects.filter(pk=int(job.id), finished_at__isnull=False).exists())
        worker = Process.objects.get(kind="Worker").pid
        time.sleep(options.settle)
        before = counter.snapshot()
        time.sleep(options.seconds)
        return counter.snapshot() - before, worker


def _until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("the worker did not start, or did not run its job")
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
