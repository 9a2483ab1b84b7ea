"""The worker's recycling collaborator on its own: counting started jobs, the room left
under ``recycle_after_jobs``, the memory bound, a stuck thread, and the words for each."""

from __future__ import annotations

import logging

import pytest

from steady_queue.processes.worker import recycling
from steady_queue.processes.worker.recycling import (
    EXIT_ABOVE_MEMORY,
    EXIT_AFTER_JOBS,
    EXIT_STUCK,
    Recycling,
    describe,
)


def test_without_bounds_it_never_falls_due_and_leaves_unbounded_room():
    bounds = Recycling()
    bounds.count(1000)

    assert not bounds.enabled and not bounds.due()
    assert bounds.left(in_flight=5) is None
    assert bounds.started == 1000 and bounds.metadata() == {}


def test_after_jobs_counts_started_jobs_and_claims_in_flight():
    bounds = Recycling(after_jobs=5)
    bounds.count(3)

    assert bounds.left() == 2 and bounds.left(in_flight=2) == 0
    assert not bounds.due() and bounds.reason is None
    bounds.count(2)
    assert bounds.due() and bounds.due()  # and stays due
    assert bounds.reason == "after 5 jobs" and bounds.exit_status == EXIT_AFTER_JOBS
    assert bounds.metadata() == {"recycle_after_jobs": 5}


def test_memory_counts_only_once_a_job_started(monkeypatch):
    monkeypatch.setattr(recycling, "resident_memory_mib", lambda: 900.0)
    bounds = Recycling(above_memory=500)

    # A fresh worker above the bound runs one job first: else its successor, as big, would too.
    assert not bounds.due()
    bounds.count()
    assert bounds.due()
    assert bounds.reason == "at 900 MiB, above 500 MiB" and bounds.exit_status == EXIT_ABOVE_MEMORY


def test_below_the_memory_bound_it_is_not_due(monkeypatch):
    monkeypatch.setattr(recycling, "resident_memory_mib", lambda: 100.0)
    bounds = Recycling(after_jobs=50, above_memory=500)
    bounds.count(10)

    assert not bounds.due() and bounds.exit_status == 0
    assert bounds.metadata() == {"recycle_after_jobs": 50, "recycle_above_memory": 500}


def test_a_stuck_thread_recycles_even_without_bounds_and_the_first_reason_stays(caplog):
    bounds = Recycling(owner="worker-x")
    with caplog.at_level(logging.WARNING, logger="steady_queue.processes"):
        bounds.stuck(2.5)
        bounds.stuck(9)

    assert bounds.due() and bounds.exit_status == EXIT_STUCK
    assert bounds.reason == "with a job stuck 2.5 s past its timeout"
    assert [r.getMessage() for r in caplog.records] == [
        "worker-x is recycled with a job stuck 2.5 s past its timeout: "
        "it claims no more and stops once its other jobs finish"
    ]


def test_a_bound_passed_first_is_the_reason_a_later_stuck_thread_does_not_replace():
    bounds = Recycling(after_jobs=1)
    bounds.count()
    assert bounds.due()
    bounds.stuck(1)

    assert bounds.reason == "after 1 jobs" and bounds.exit_status == EXIT_AFTER_JOBS


@pytest.mark.parametrize(
    "status, words",
    [
        (EXIT_AFTER_JOBS, "recycled after 10 jobs"),
        (EXIT_ABOVE_MEMORY, "recycled above 300 MiB of memory"),
        (EXIT_STUCK, "recycled with a job stuck past its timeout"),
    ],
)
def test_the_supervisor_describes_each_exit_status(status, words):
    assert describe(status, 10, 300) == words
