"""What the models answer a run about to start or ending: cancelled? throttled? lost?

``Job.cancelled_run``, ``Job.admit_or_throttle`` and ``ClaimedExecution.lost_while_waiting``
are the runner's questions (``steady_queue.runner.perform``); here, each on its own.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import steady_queue
from steady_queue import storage
from steady_queue.exceptions import JobCancelled, RescheduleJob
from steady_queue.models import ClaimedExecution, Job, Process, ThrottledExecution
from steady_queue.models.execution.claimed_finish import Failure, Throttle
from tests import tasks
from tests.tasks import rate_limited

pytestmark = pytest.mark.django_db(transaction=True)


def claimed_job(process: Process | None = None) -> ClaimedExecution:
    tasks.noop.enqueue()
    (claimed,) = storage.for_alias().claim(["*"], 1, process)
    return claimed


# -- Job.cancelled_run -------------------------------------------------------------------


def test_a_job_nobody_cancelled_runs_on_and_ends_as_it_ends():
    job = claimed_job().job

    assert job.cancelled_run() is None
    assert job.cancelled_run(ValueError("the task's own"), ask=True) is None


def test_the_row_as_claimed_answers_without_a_query_the_database_when_asked():
    job = claimed_job().job
    Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())  # lands now

    with CaptureQueriesContext(connection) as captured:
        assert job.cancelled_run() is None  # what the claimed row knew
    assert captured.captured_queries == []
    ended = job.cancelled_run(ask=True)

    assert isinstance(ended, Failure) and ended.final
    assert isinstance(ended.exc, JobCancelled)
    assert str(ended.exc) == f"Job {job.pk} was cancelled"
    assert ended.exc.__cause__ is None


def test_a_cancel_the_run_saw_ends_it_cancelled_with_what_it_raised_as_the_cause():
    job = claimed_job().job
    raised = ValueError("interrupted half-way")

    with CaptureQueriesContext(connection) as captured:
        ended = job.cancelled_run(raised, seen=True, ask=True)

    assert captured.captured_queries == []  # seen: nothing to ask
    assert ended.final and isinstance(ended.exc, JobCancelled)
    assert ended.exc.__cause__ is raised


def test_a_request_to_run_again_after_a_cancel_ends_cancelled_not_rescheduled():
    job = claimed_job().job
    Job.objects.filter(pk=job.pk).update(cancel_requested_at=timezone.now())
    request = RescheduleJob(timezone.now() + timedelta(minutes=5))

    ended = job.cancelled_run(request, ask=True)

    assert ended.final and isinstance(ended.exc, JobCancelled)
    assert ended.exc.__cause__ is request


def test_a_run_that_raised_job_cancelled_ends_with_it_for_good():
    job = claimed_job().job
    raised = JobCancelled(f"Job {job.pk} was cancelled")

    with CaptureQueriesContext(connection) as captured:
        ended = job.cancelled_run(raised, ask=True)

    assert captured.captured_queries == []
    assert ended == Failure(raised, final=True)


# -- Job.admit_or_throttle ---------------------------------------------------------------


def test_a_job_without_a_rate_limit_is_admitted_without_a_query():
    job = claimed_job().job

    with CaptureQueriesContext(connection) as captured:
        assert job.admit_or_throttle() is None
    assert captured.captured_queries == []


def test_a_run_with_room_in_its_window_is_admitted():
    rate_limited.three_a_minute.enqueue(1)

    assert Job.objects.get().admit_or_throttle() is None


def test_a_run_without_room_is_throttled_until_its_window_frees():
    for n in range(4):
        rate_limited.three_a_minute.enqueue(n)  # three reserve the window, one waits
    waiting = Job.objects.get(throttled_execution__isnull=False)
    before = timezone.now()

    ended = waiting.admit_or_throttle()

    assert isinstance(ended, Throttle)
    assert before < ended.until <= before + timedelta(minutes=1, seconds=1)
    assert ThrottledExecution.objects.count() == 1  # asking stored nothing


# -- ClaimedExecution.lost_while_waiting -------------------------------------------------


def test_an_in_process_claim_is_never_lost():
    claimed = claimed_job()
    claimed.created_at -= steady_queue.process_alive_threshold * 2

    assert claimed.lost_while_waiting() is False


def test_a_recent_claim_is_not_asked_after():
    process = Process.objects.create(kind="Worker", name="w", pid=1)
    claimed = claimed_job(process)
    ClaimedExecution.objects.filter(job_id=claimed.job_id).delete()  # pruned already

    with CaptureQueriesContext(connection) as captured:
        assert claimed.lost_while_waiting() is False  # too young to have been pruned
    assert captured.captured_queries == []


def test_a_claim_that_waited_long_is_lost_only_once_taken_from_its_process():
    process = Process.objects.create(kind="Worker", name="w", pid=1)
    claimed = claimed_job(process)
    claimed.created_at -= steady_queue.process_alive_threshold / 2 + timedelta(seconds=1)

    assert claimed.lost_while_waiting() is False  # still held
    ClaimedExecution.objects.filter(job_id=claimed.job_id).delete()  # what a prune does
    assert claimed.lost_while_waiting() is True


# -- ClaimedExecution.start_unless_lost ----------------------------------------------------


class StoppedWhileAsking:
    """A monotonic clock under which the process stops once, right after its first
    answer, for as long as ``stopped`` says; while it is stopped, ``meanwhile`` runs."""

    def __init__(self, stopped: float, meanwhile) -> None:
        self.now, self.calls, self.stopped, self.meanwhile = 1000.0, 0, stopped, meanwhile

    def monotonic(self) -> float:
        self.calls += 1
        if self.calls == 2:  # the first answer is in: the stop
            self.now += self.stopped
            self.meanwhile()
        return self.now


def test_a_fresh_answer_starts_the_run_once():
    process = Process.objects.create(kind="Worker", name="w", pid=1)
    claimed = claimed_job(process)
    starts = []

    assert claimed.start_unless_lost(lambda: starts.append(True)) is True
    assert starts == [True]


def test_a_worker_stopped_while_it_asked_and_pruned_meanwhile_does_not_start(monkeypatch):
    from steady_queue.models.execution import claimed_lifecycle

    process = Process.objects.create(kind="Worker", name="w", pid=1)
    claimed = claimed_job(process)

    def prune():  # what happens while it is stopped: its claim taken, time passes
        ClaimedExecution.objects.filter(job_id=claimed.job_id).delete()
        claimed.created_at -= steady_queue.process_alive_threshold * 2

    threshold = steady_queue.process_alive_threshold.total_seconds()
    clock = StoppedWhileAsking(stopped=threshold, meanwhile=prune)
    monkeypatch.setattr(claimed_lifecycle, "time", clock)
    starts = []

    # The first answer ("not lost": too young) is stale by the time it is read.
    assert claimed.start_unless_lost(lambda: starts.append(True)) is False
    assert starts == []
    assert clock.calls >= 3  # asked again


def test_a_short_pause_while_asking_does_not_ask_again(monkeypatch):
    from steady_queue.models.execution import claimed_lifecycle

    process = Process.objects.create(kind="Worker", name="w", pid=1)
    claimed = claimed_job(process)
    clock = StoppedWhileAsking(stopped=0.5, meanwhile=lambda: None)
    monkeypatch.setattr(claimed_lifecycle, "time", clock)
    starts = []

    assert claimed.start_unless_lost(lambda: starts.append(True)) is True
    assert starts == [True] and clock.calls == 2


def test_a_zero_alive_threshold_asks_twice_at_most_and_starts(monkeypatch):
    from steady_queue.models.execution import claimed_lifecycle

    monkeypatch.setattr(steady_queue, "process_alive_threshold", timedelta(0))
    process = Process.objects.create(kind="Worker", name="w", pid=1)
    claimed = claimed_job(process)
    clock = StoppedWhileAsking(stopped=0.5, meanwhile=lambda: None)
    monkeypatch.setattr(claimed_lifecycle, "time", clock)
    starts = []

    assert claimed.start_unless_lost(lambda: starts.append(True)) is True  # still held
    assert starts == [True] and clock.calls == 4
