"""Benchmark Steady Queue against django-tasks-db on the same machine, in the same run.

    python bench/run.py --db postgres            # full run (see bench/README.md)
    python bench/run.py --db sqlite --smoke      # tiny run, used by CI so the script cannot rot

Every figure is the median of --repeat runs; ratios compare the two backends' medians.
The database (--name, default sq_bench) is dropped and created again.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    options = _parse_args()
    os.environ["SQ_BENCH_DB"] = options.db
    os.environ["SQ_BENCH_NAME"] = options.name
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    from bench import database

    database.recreate()
    import django

    django.setup()
    database.migrate()
    from bench import measures

    plan = measures.Plan.smoke() if options.smoke else measures.Plan.full(options)
    print(measures.run_all(plan))
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="sqlite")
    parser.add_argument("--name", default=os.environ.get("SQ_BENCH_NAME", "sq_bench"))
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repetition (CI)")
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs per drain and bulk run")
    parser.add_argument("--dtdb-jobs", type=int, default=2_000, help="jobs per dtdb drain")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per figure (>= 3)")
    parser.add_argument("--finished", type=int, default=1_000_000, help="finished rows preloaded")
    parser.add_argument("--latency-samples", type=int, default=50)
    parser.add_argument("--bulk-batch", type=int, default=10_000, help="jobs per enqueue_all")
    parser.add_argument(
        "--configs", default="1x3,2x5,2x10,2x20", help="worker configurations, processes x threads"
    )
    return parser.parse_args()


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"\nbenchmark finished in {time.monotonic() - started:.0f} s")
    sys.exit(code)
