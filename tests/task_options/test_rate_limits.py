"""Rate limits: no more than ``to`` starts per ``per``; jobs over it wait as throttled."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from steady_queue.backend import enqueue_all
from steady_queue.compat import TaskResultStatus, task, task_started
from steady_queue.exceptions import JobCancelled, RateLimitKeyError
from steady_queue.models import (
    FailedExecution,
    Job,
    RateLimitBucket,
    RateLimitSlot,
    ReadyExecution,
    ThrottledExecution,
)
from steady_queue.models.execution.throttled import repair_forgotten
from steady_queue.task_options.rate_limits import (
    WHOLE_TASK,
    RateLimit,
    bucket_key,
    rate_limit,
    rate_limit_for,
)
from steady_queue.testing import release_throttled, run_ready_jobs
from tests.tasks import features
from tests.tasks import rate_limited as tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _clear_starts():
    tasks.STARTS.clear()
    yield
    tasks.STARTS.clear()


def states(results) -> list[str]:
    jobs = Job.objects.with_execution().in_bulk([int(result.id) for result in results])
    return [jobs[int(result.id)].state for result in results]


def age_window(task, job_key: str, by: timedelta) -> None:
    """Move every start of a window ``by`` into the past: as if that much time went by."""
    slots = RateLimitSlot.objects.filter(bucket_id=bucket_key(task.module_path, job_key))
    for slot in slots:
        slot.started_at -= by
        slot.save(update_fields=["started_at"])
    RateLimitBucket.objects.filter(key=bucket_key(task.module_path, job_key)).update(
        next_release_at=timezone.now()
    )


# Declaring: bad input is refused at decoration time, with what is wrong


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"to": 0, "per": timedelta(seconds=1)}, ValueError, "to=...) must be at least 1"),
        ({"to": -3, "per": timedelta(seconds=1)}, ValueError, "must be at least 1"),
        ({"to": 2.5, "per": timedelta(seconds=1)}, TypeError, "whole number"),
        ({"to": True, "per": timedelta(seconds=1)}, TypeError, "whole number"),
        ({"to": 5, "per": timedelta(seconds=-1)}, ValueError, "per=...) must be positive"),
        ({"to": 5, "per": timedelta(0)}, ValueError, "must be positive"),
        ({"to": 5, "per": 1}, TypeError, "must be a timedelta"),
        ({"to": 5, "per": timedelta(seconds=1), "key": "customer"}, TypeError, "key=...)"),
    ],
)
def test_bad_declarations_are_refused_when_decorating(options, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        rate_limit(**options)
    with pytest.raises(error):
        RateLimit(**options)


def test_rate_limit_goes_above_task():
    with pytest.raises(TypeError, match="goes above @task"):
        rate_limit(to=1, per=timedelta(seconds=1))(lambda: None)


@pytest.mark.skipif(not features.TASK_TAKES_OPTIONS, reason="@task(**options) is Django 6.1+")
def test_task_keyword_takes_only_a_rate_limit():
    with pytest.raises(TypeError, match=r"rate_limit=...\) takes a RateLimit"):

        @task(rate_limit={"to": 1})
        def wrong() -> None: ...


@pytest.mark.skipif(not features.TASK_TAKES_OPTIONS, reason="@task(**options) is Django 6.1+")
def test_task_keyword_declares_the_limit():
    limit = rate_limit_for(tasks.declared_in_task.module_path)
    assert (limit.to, limit.per) == (1, timedelta(minutes=1))
    first, second = tasks.declared_in_task.enqueue(1), tasks.declared_in_task.enqueue(2)
    assert states([first, second]) == ["ready", "throttled"]


def test_a_key_function_that_raises_writes_nothing_and_names_the_task():
    before = Job.objects.count(), RateLimitBucket.objects.count()
    with pytest.raises(RateLimitKeyError, match=r"tests\.tasks\.rate_limited\.key_divides") as info:
        tasks.key_divides.enqueue(0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(RateLimitKeyError):
        enqueue_all([(tasks.key_divides, (1,), {}), (tasks.key_divides, (0,), {})])
    assert (Job.objects.count(), RateLimitBucket.objects.count()) == before


# Enqueueing: ready while the window has room, throttled beyond it


def test_jobs_beyond_the_limit_wait_as_throttled_not_failed():
    results = [tasks.three_a_minute.enqueue(n) for n in range(5)]

    assert states(results) == ["ready"] * 3 + ["throttled"] * 2
    job = Job.objects.get(pk=results[4].id)
    assert job.rate_limit_key == WHOLE_TASK
    assert job.status == TaskResultStatus.READY
    assert job.attempts == []
    assert ThrottledExecution.objects.count() == 2


def test_enqueue_all_fills_the_room_and_throttles_the_rest_in_constant_queries():
    calls = [(tasks.three_a_minute, (n,), {}) for n in range(10)]
    with CaptureQueriesContext(connection) as small:
        enqueue_all(calls)
    calls = [(tasks.three_a_minute, (n,), {}) for n in range(200)]
    with CaptureQueriesContext(connection) as large:
        enqueue_all(calls)

    assert ReadyExecution.objects.count() == 3
    assert ThrottledExecution.objects.count() == 207
    assert len(large.captured_queries) <= len(small.captured_queries) + 2  # bulk chunks


def test_each_key_has_its_own_window():
    results = [tasks.per_customer.enqueue(customer, n) for customer in (1, 2) for n in range(3)]

    assert states(results) == ["ready", "ready", "throttled"] * 2
    keys = set(Job.objects.values_list("rate_limit_key", flat=True))
    assert keys == {"customer-1", "customer-2"}


# Running: the window counts starts; no head-of-line blocking


def test_only_the_room_runs_and_an_unlimited_job_behind_the_backlog_runs_at_once():
    for n in range(6):
        tasks.three_a_minute.enqueue(n)
    tasks.unlimited.enqueue(99)

    run_ready_jobs()

    expected = [("three_a_minute", n) for n in range(3)] + [("unlimited", 99)]
    assert list(tasks.STARTS) == expected
    assert ThrottledExecution.objects.count() == 3


def test_a_run_over_the_limit_is_throttled_before_it_starts_and_counts_no_attempt():
    results = [tasks.three_a_minute.enqueue(n) for n in range(3)]
    run_ready_jobs()
    # A job made ready without its window's say (as by hand): the start is what counts.
    extra = tasks.three_a_minute.enqueue(3)
    ThrottledExecution.objects.filter(job_id=extra.id).delete()
    ReadyExecution.create_all_from_jobs([Job.objects.get(pk=extra.id)])
    signalled = []
    task_started.connect(receiver := lambda **kw: signalled.append(kw["task_result"].id))
    try:
        assert run_ready_jobs() == []
    finally:
        task_started.disconnect(receiver)

    assert signalled == []
    assert states([*results, extra]) == ["finished"] * 3 + ["throttled"]
    job = Job.objects.get(pk=extra.id)
    assert job.attempts == []
    bucket = RateLimitBucket.objects.get(key=job.rate_limit_bucket_key)
    started = RateLimitSlot.objects.filter(bucket=bucket).order_by("started_at").first()
    assert bucket.next_release_at >= started.started_at + timedelta(minutes=1)


def test_a_dispatcher_releases_as_many_as_the_window_has_room_for():
    for n in range(8):
        tasks.three_a_minute.enqueue(n)
    run_ready_jobs()
    assert release_throttled() == 0  # the window is full for a minute

    age_window(tasks.three_a_minute, WHOLE_TASK, timedelta(minutes=1, seconds=1))
    assert release_throttled() == 3
    run_ready_jobs()

    assert [n for _, n in tasks.STARTS] == list(range(6))
    assert ThrottledExecution.objects.count() == 2
    bucket = RateLimitBucket.objects.get()
    assert bucket.next_release_at > timezone.now() + timedelta(seconds=55)


def test_throttled_jobs_keep_their_turn_over_newer_ones():
    for n in range(4):
        tasks.three_a_minute.enqueue(n)
    run_ready_jobs()
    age_window(tasks.three_a_minute, WHOLE_TASK, timedelta(minutes=2))
    tasks.three_a_minute.enqueue(100)  # the window has room, but job 3 waits already

    release_throttled()
    run_ready_jobs()

    assert [n for _, n in tasks.STARTS][3:] == [3, 100]


def test_a_released_job_keeps_its_reserved_slot_until_it_starts():
    for n in range(4):
        tasks.three_a_minute.enqueue(n)
    run_ready_jobs()
    age_window(tasks.three_a_minute, WHOLE_TASK, timedelta(minutes=2))
    release_throttled()
    # Job 3 is ready with a reservation: a newcomer finds the window full.
    assert states([tasks.three_a_minute.enqueue(n) for n in (4, 5, 6)]) == ["ready"] * 2 + [
        "throttled"
    ]


def test_no_release_query_but_one_when_nothing_is_due():
    tasks.three_a_minute.enqueue(1)
    with CaptureQueriesContext(connection) as captured:
        assert ThrottledExecution.release_due(500) == (0, None)
    assert len(captured.captured_queries) == 1


# Operators: throttled jobs can be cancelled and discarded


def test_cancelling_a_throttled_job_ends_it_at_once():
    results = [tasks.three_a_minute.enqueue(n) for n in range(4)]
    job = Job.objects.get(pk=results[3].id)

    job.cancel()

    assert states([results[3]]) == ["failed"]
    failed = FailedExecution.objects.get(job_id=job.pk)
    assert failed.exception_class == f"{JobCancelled.__module__}.{JobCancelled.__qualname__}"


def test_discarding_throttled_jobs():
    for n in range(5):
        tasks.three_a_minute.enqueue(n)

    assert Job.objects.filter(throttled_execution__isnull=False).discard_all() == 2
    assert ThrottledExecution.objects.count() == 0
    assert Job.objects.count() == 3


def test_admitting_a_run_locks_the_window_reads_its_slots_and_stamps_one():
    tasks.three_a_minute.enqueue(1)
    job = Job.objects.get()

    with CaptureQueriesContext(connection) as captured:
        assert job.admit_run() is None

    statements = [q["sql"].split()[0].upper() for q in captured.captured_queries]
    work = [s for s in statements if s not in ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")]
    assert work == ["SELECT", "SELECT", "UPDATE", "UPDATE"], statements
    assert RateLimitSlot.objects.get().reserved_for is None  # the reservation became its start


def test_an_unlimited_job_admits_its_run_without_a_query():
    tasks.unlimited.enqueue(1)
    job = Job.objects.get()
    with CaptureQueriesContext(connection) as captured:
        assert job.admit_run() is None
    assert captured.captured_queries == []


def test_idle_windows_are_pruned_and_come_back_at_the_next_enqueue():
    tasks.per_customer.enqueue(1, 1)
    for n in range(3):
        tasks.per_customer.enqueue(2, n)  # customer 2 has a job waiting
    age_window(tasks.per_customer, "customer-1", timedelta(minutes=5))
    age_window(tasks.per_customer, "customer-2", timedelta(minutes=5))
    RateLimitBucket.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    RateLimitBucket.objects.filter(
        key=bucket_key(tasks.per_customer.module_path, "customer-1")
    ).update(next_release_at=None)

    assert RateLimitBucket.prune() == 1

    remaining = RateLimitBucket.objects.get()
    assert remaining.limit_key == "customer-2"
    assert not RateLimitSlot.objects.exclude(bucket=remaining).exists()
    assert states([tasks.per_customer.enqueue(1, 9)]) == ["ready"]


def test_a_window_redeclared_with_another_limit_counts_its_starts_against_the_new_one():
    for n in range(3):
        tasks.three_a_minute.enqueue(n)
    run_ready_jobs()
    with transaction.atomic():
        window = RateLimitBucket.objects.get().window(timezone.now())
    assert window.room() == 0
    window.limit = RateLimit(to=5, per=timedelta(minutes=1))
    assert window.room() == 2


def test_maintenance_gives_a_turn_to_jobs_waiting_without_one():
    for n in range(5):
        tasks.three_a_minute.enqueue(n)
    RateLimitBucket.objects.all().delete()  # as if the window had been lost

    assert repair_forgotten() == 1

    bucket = RateLimitBucket.objects.get()
    assert bucket.next_release_at <= timezone.now()
    assert repair_forgotten() == 0
    assert release_throttled() == 2  # the window lost its starts: room for all


def test_a_release_gives_the_windows_next_turn_not_an_immediate_poll():
    for n in range(8):
        tasks.three_a_minute.enqueue(n)
    run_ready_jobs()
    age_window(tasks.three_a_minute, WHOLE_TASK, timedelta(minutes=2))

    released, next_turn = ThrottledExecution.release_due(500)

    assert released == 3
    assert next_turn == RateLimitBucket.objects.get().next_release_at
    assert next_turn > timezone.now() + timedelta(seconds=55)


def test_a_release_waits_for_an_admission_holding_the_window_rather_than_skip_it():
    for n in range(5):
        tasks.three_a_minute.enqueue(n)
    run_ready_jobs()
    age_window(tasks.three_a_minute, WHOLE_TASK, timedelta(minutes=2))
    locked, done = threading.Event(), threading.Event()

    def hold_the_window() -> None:  # as a worker admitting a run would, briefly
        try:
            with transaction.atomic():
                RateLimitBucket.objects.select_for_update().get()
                locked.set()
                done.wait(timeout=0.3)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_window)
    holder.start()
    assert locked.wait(timeout=10)
    try:
        assert ThrottledExecution.release_due(500)[0] == 2
    finally:
        done.set()
        holder.join()
