"""Celery's app and tasks for bench/compare_brokers.py: the same work as Steady Queue's.

``celery -A bench.celery_app worker ...`` runs it with no Django set up. The broker is
Redis at $SQ_BENCH_REDIS_URL. The configuration is Celery's documented throughput
advice (docs "Optimizing", "Tasks: ignore results you don't want"): no result backend
and ``task_ignore_result`` (nothing is stored per task), everything else at its
default (``worker_prefetch_multiplier`` 4, ``task_acks_late`` off) except
``task_acks_late``, which $SQ_BENCH_CELERY_ACKS_LATE=1 turns on.
"""

from __future__ import annotations

import os
import time

from celery import Celery

from bench import sink

app = Celery("bench", broker=os.environ.get("SQ_BENCH_REDIS_URL", "redis://127.0.0.1:6399/0"))
app.conf.update(
    task_ignore_result=True,
    result_backend=None,
    task_acks_late=os.environ.get("SQ_BENCH_CELERY_ACKS_LATE") == "1",
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    worker_redirect_stdouts=False,
)


@app.task(name="bench.tick")
def tick(number: int = 0) -> None:
    sink.record("tick", number)


@app.task(name="bench.sleep_tick")
def sleep_tick(seconds: float, number: int = 0) -> None:
    time.sleep(seconds)
    sink.record("tick", number)


@app.task(name="bench.stamp")
def stamp(scheduled: float, sent: float = 0.0) -> None:
    sink.record("stamp", repr(scheduled), repr(sent))
