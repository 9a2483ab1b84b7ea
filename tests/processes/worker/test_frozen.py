"""Issue 9, defect 5: a worker frozen (SIGSTOP) past the alive threshold, then resumed.

Pruned while frozen, its row is gone and its job failed; the job's slot went on to the
next job. Resumed, it must start nothing more: it lets its in-flight run go on for up
to ``shutdown_timeout`` and exits, and its supervisor starts another worker in its place.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from steady_queue.models import Job, Process
from tests.processes.conftest import freeze, has_exited, wait_until
from tests.tasks.concurrency import limited, unlimited

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

PRUNED_ERROR = "steady_queue.processes.ProcessPrunedError"
SHUTDOWN_TIMEOUT = 1.0


@dataclass
class Run:
    label: str
    pid: int
    started: float
    ended: float | None


def runs(log: Path) -> list[Run]:
    found: dict[str, Run] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        event, label, pid, at = line.split()
        if event == "start":
            found[label] = Run(label, int(pid), float(at), None)
        else:
            found[label].ended = float(at)
    return list(found.values())


def most_at_once(runs_: list[Run]) -> int:
    """The most runs in progress at one moment (an end sorts before a start at a tie)."""
    events = sorted((t, change) for r in runs_ for t, change in ((r.started, 1), (r.ended, -1)))
    running = most = 0
    for _, change in events:
        running += change
        most = max(most, running)
    return most


def started(log: Path, label: str) -> bool:
    return any(run.label == label for run in runs(log))


def state(result) -> str:
    return Job.objects.get(pk=result.id).state


def test_a_pruned_worker_resumed_starts_nothing_more_and_exits(start_supervisor, tmp_path):
    log, release = tmp_path / "runs.log", tmp_path / "release"
    supervisor = start_supervisor(
        "TWO_QUEUES",
        children=2,
        SQ_ALIVE_THRESHOLD="1.5",
        SQ_HEARTBEAT_INTERVAL="0.2",
        SQ_SHUTDOWN_TIMEOUT=str(SHUTDOWN_TIMEOUT),
    )
    [worker] = [row for row in supervisor.children() if row.metadata["queues"] == ["low"]]
    held = limited.using(queue_name="low").enqueue(str(log), "held", str(release))
    wait_until(lambda: started(log, "held"), what="the held job to start")
    later = [
        limited.using(queue_name="other").enqueue(str(log), f"later-{n}", "", 0.2) for n in range(3)
    ]
    assert {state(r) for r in later} == {"blocked"}

    freeze(worker)
    frozen_at = time.time()
    try:
        # Ready for the frozen worker's queue, and for nobody else's, when it resumes.
        waiting = [unlimited.using(queue_name="low").enqueue(str(log), f"w-{n}") for n in range(4)]
        wait_until(lambda: state(held) == "failed", what="the prune to fail the held job")
        wait_until(lambda: started(log, "later-0"), what="the slot to go on to the next job")
    finally:
        os.kill(worker.pid, signal.SIGCONT)  # "held" would go on for a minute
    resumed_at = time.time()

    wait_until(lambda: has_exited(worker.pid), what="the pruned worker to exit")
    exited_by = time.time()
    release.touch()
    # Its run in flight went on for shutdown_timeout at most (plus slack), not a minute.
    assert exited_by - resumed_at < SHUTDOWN_TIMEOUT + 5
    every = [*later, *waiting]
    wait_until(lambda: all(state(r) == "finished" for r in every), what="the replacement's work")

    after_freeze = [
        run.label for run in runs(log) if run.pid == worker.pid and run.started > frozen_at
    ]
    assert after_freeze == []  # it started nothing more: the waiting jobs ran elsewhere
    replacement = Process.objects.get(kind="Worker", metadata__queues=["low"])
    assert replacement.pid != worker.pid
    failed = Job.objects.get(pk=held.id)
    assert failed.state == "failed" and failed.failed_execution.exception_class == PRUNED_ERROR

    limited_runs = [run for run in runs(log) if run.label.startswith(("held", "later"))]
    for run in limited_runs:  # "held" ended when its process exited, at the latest
        run.ended = exited_by if run.ended is None else run.ended
    # The documented bound: to=1, plus the frozen worker's run in flight when it froze
    # (it ends late, overlapping the job that took its slot). Without it, never over to.
    assert most_at_once(limited_runs) <= 2
    assert most_at_once([run for run in limited_runs if run.label != "held"]) == 1
