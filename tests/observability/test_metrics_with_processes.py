"""The counters add up across worker processes and survive a restart (real supervisors)."""

from __future__ import annotations

import signal

import pytest

from steady_queue.models import TaskRollup
from tests.processes.conftest import finished_count, wait_until
from tests.tasks import acceptance

from .metrics import TOKEN, sample, scrape

pytestmark = [pytest.mark.urls("tests.observability.urls")]


def succeeded(samples: dict) -> float | None:
    return sample(
        samples,
        "steady_queue_jobs_finished_total",
        task="tests.tasks.acceptance.hold_until",
        queue="default",
    )


def test_counters_add_up_across_two_workers_and_survive_a_restart(
    start_supervisor, settings, tmp_path
):
    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN
    log, release = tmp_path / "runs.log", tmp_path / "release"
    # SCALE: two worker processes of 4 threads. Eight jobs that wait for each other
    # fill both: each process ran four of them.
    first = start_supervisor("SCALE", children=2)
    for n in range(8):
        acceptance.hold_until.enqueue(str(log), f"first-{n}", str(release))
    wait_until(lambda: log.exists() and log.read_text().count("start") == 8, what="8 runs")
    pids = {line.split()[2] for line in log.read_text().splitlines()}
    assert len(pids) == 2
    release.touch()
    wait_until(lambda: finished_count() == 8, what="8 finished jobs")
    # Written by each worker within its flush interval, without a stop.
    wait_until(lambda: succeeded(scrape()) == 8, what="the counter to reach 8")
    first.send(signal.SIGTERM)
    assert first.wait() == 0

    second = start_supervisor("SCALE", children=2)
    for n in range(5):
        acceptance.hold_until.enqueue(str(log), f"second-{n}", str(release))
    wait_until(lambda: finished_count() == 13, what="13 finished jobs")
    second.send(signal.SIGTERM)
    assert second.wait() == 0  # a stop writes what is left: no waiting needed after it
    samples = scrape()
    assert succeeded(samples) == 13
    runs = sample(
        samples,
        "steady_queue_job_run_duration_seconds_count",
        task=acceptance.hold_until.module_path,
    )
    assert runs == 13
    hours = TaskRollup.objects.exclude(period=TaskRollup.all_time())
    assert sum(hours.values_list("succeeded", flat=True)) == 13
