"""Steady Queue's tasks for bench/compare_brokers.py: the same work as Celery's and RQ's
(bench/celery_app.py, bench/rq_jobs.py), each leaving a line in bench/sink.py's file."""

import time

from bench import sink
from steady_queue.compat import task


@task()
def tick(number: int = 0):
    sink.record("tick", number)


@task()
def sleep_tick(seconds: float, number: int = 0):
    time.sleep(seconds)
    sink.record("tick", number)


@task()
def stamp(scheduled: float, sent: float = 0.0):
    sink.record("stamp", repr(scheduled), repr(sent))
