"""docs/reference/operations.md: one-job actions, queryset actions, queues, clearing
finished jobs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

import steady_queue
from steady_queue.exceptions import JobStateError
from steady_queue.models import Job, Queue
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import TaskResultDoesNotExist, TaskResultStatus, default_task_backend
from tests.tasks.acceptance import discard_myself, fail, one_at_a_time, record, seen

pytestmark = pytest.mark.django_db


def fresh(result) -> Job:
    return Job.objects.get(pk=result.id)


def test_readme_one_job_actions():
    failed = fail.enqueue("x")
    scheduled = record.using(run_after=timedelta(hours=1)).enqueue("later")
    one_at_a_time.enqueue("k")
    blocked = one_at_a_time.enqueue("k")
    run_ready_jobs(queues=["default"], max_jobs=1)
    assert fresh(failed).state == "failed"

    job = Job.objects.get(pk=failed.id)
    job.retry()
    assert fresh(failed).state == "ready"

    job = Job.objects.get(pk=scheduled.id)
    job.dispatch_now()
    assert fresh(scheduled).state == "ready"

    job = Job.objects.get(pk=blocked.id)
    assert job.release() is False  # its key's one slot is taken
    assert fresh(blocked).state == "blocked"
    assert job.release(force=True) is True
    assert fresh(blocked).state == "ready"

    job = Job.objects.get(pk=scheduled.id)
    job.discard()
    assert not Job.objects.filter(pk=scheduled.id).exists()
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(scheduled.id)


@pytest.mark.parametrize("setup", ["ready", "scheduled", "blocked", "failed"])
def test_discard_applies_to_every_pending_state(setup):
    if setup == "ready":
        result = record.enqueue("x")
    elif setup == "scheduled":
        result = record.using(run_after=timedelta(days=1)).enqueue("x")
    elif setup == "blocked":
        one_at_a_time.enqueue("k")
        result = one_at_a_time.enqueue("k")
    else:
        result = fail.enqueue("x")
        run_ready_jobs()
    assert fresh(result).state == setup
    Job.objects.get(pk=result.id).discard()
    assert not Job.objects.filter(pk=result.id).exists()


def test_a_running_job_cannot_be_discarded():
    result = discard_myself.enqueue()  # it tries to discard itself while running
    run_ready_jobs()
    assert seen("discard_myself") == [
        f"Job {result.id} is running: a running job cannot be discarded."
    ]
    assert fresh(result).state == "finished"


def test_actions_that_do_not_apply_raise_job_state_error_saying_why():
    finished = record.enqueue("done")
    run_ready_jobs()
    job = Job.objects.get(pk=finished.id)
    for action in (job.retry, job.discard, job.dispatch_now, job.release):
        with pytest.raises(JobStateError) as caught:
            action()
        assert str(finished.id) in str(caught.value)
        assert "finished" in str(caught.value)

    ready = Job.objects.get(pk=record.enqueue("ready").id)
    with pytest.raises(JobStateError, match="ready"):
        ready.retry()
    with pytest.raises(JobStateError, match="ready"):
        ready.dispatch_now()
    with pytest.raises(JobStateError, match="ready"):
        ready.release()


def test_queryset_actions_return_how_many_they_changed():
    for i in range(4):
        fail.enqueue(i)
    record.enqueue("ready")
    for i in range(3):
        record.using(queue_name="low", run_after=timedelta(hours=1)).enqueue(i)
    run_ready_jobs(queues=["default"])

    midnight = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    failed_today = Job.objects.filter(failed_execution__created_at__gte=midnight)
    assert failed_today.count() == 4
    assert failed_today.retry_all(batch_size=3) == 4
    assert (
        Job.objects.filter(task_path=fail.module_path, ready_execution__isnull=False).count() == 4
    )

    assert Job.objects.filter(queue_name="low").dispatch_all_now() == 3
    assert Job.objects.filter(queue_name="low").dispatch_all_now() == 0

    assert Job.objects.filter(task_path=fail.module_path).discard_all() == 4
    assert not Job.objects.filter(task_path=fail.module_path).exists()
    assert Job.objects.filter(pk__in=[]).retry_all() == 0


def test_discard_all_skips_running_jobs():
    result = discard_myself.enqueue()
    assert Job.objects.filter(pk=result.id).discard_all() == 1
    assert Job.objects.filter(pk=result.id).discard_all() == 0


def test_queue_pause_resume_size_latency():
    queue = Queue("low")
    assert queue.size == 0 and queue.latency is None and not queue.is_paused
    record.using(queue_name="low").enqueue("a")
    record.using(queue_name="low").enqueue("b")
    assert Queue("low").size == 2
    latency = Queue("low").latency
    assert isinstance(latency, timedelta) and latency >= timedelta(0)

    Queue("low").pause()
    assert Queue("low").is_paused
    record.using(queue_name="low").enqueue("c")  # enqueueing still works
    assert Queue("low").size == 3
    Queue("low").pause()  # pausing twice is harmless
    Queue("low").resume()
    assert not Queue("low").is_paused


def test_paused_queue_is_skipped_by_the_in_process_runner():
    record.using(queue_name="low").enqueue("paused")
    record.enqueue("running")
    Queue("low").pause()
    run_ready_jobs()
    assert seen("record") == ["running"]
    Queue("low").resume()
    run_ready_jobs()
    assert seen("record") == ["running", "paused"]


def test_queue_all_in_two_queries(django_assert_num_queries):
    record.using(queue_name="low").enqueue("a")
    record.using(queue_name="background").enqueue("b")
    record.using(queue_name="background").enqueue("c")
    Queue("other").pause()
    with django_assert_num_queries(2):
        queues = Queue.all()
        summary = {(q.name, q.size, q.is_paused, q.latency is not None) for q in queues}
    assert summary == {
        ("background", 2, False, True),
        ("low", 1, False, True),
        ("other", 0, True, False),
    }


def test_clear_finished_in_batches():
    for i in range(5):
        record.enqueue(i)
    fail.enqueue("kept")
    run_ready_jobs()
    # Nothing finished more than a day ago (the default) yet.
    assert Job.objects.clear_finished_in_batches() == 0
    later = timezone.now() + timedelta(seconds=1)
    assert (
        Job.objects.clear_finished_in_batches(batch_size=2, task_path="nope", finished_before=later)
        == 0
    )
    assert (
        Job.objects.clear_finished_in_batches(
            batch_size=2, finished_before=later, task_path=record.module_path
        )
        == 5
    )
    assert Job.objects.count() == 1  # the failed job is not "finished"


def test_clear_finished_jobs_after_is_honoured(monkeypatch):
    record.enqueue("x")
    run_ready_jobs()
    monkeypatch.setattr(steady_queue, "clear_finished_jobs_after", timedelta(0))
    assert Job.objects.clear_finished_in_batches() == 1


def test_built_in_cleanup_task(monkeypatch, no_recurring):
    from steady_queue.cleanup import clear_finished_jobs
    from steady_queue.task_options.recurring_task import recurring

    recurring(schedule="0 * * * *", key="clear finished jobs")(clear_finished_jobs)
    record.enqueue("x")
    run_ready_jobs()
    monkeypatch.setattr(steady_queue, "clear_finished_jobs_after", timedelta(0))
    cleanup = clear_finished_jobs.enqueue()
    run_ready_jobs()
    cleanup.refresh()
    assert cleanup.status == TaskResultStatus.SUCCESSFUL
    assert cleanup.return_value >= 1
    assert Job.objects.filter(task_path=record.module_path).count() == 0


def test_preserve_finished_jobs_false_deletes_finished_jobs(monkeypatch):
    monkeypatch.setattr(steady_queue, "preserve_finished_jobs", False)
    ok = record.enqueue("x")
    bad = fail.enqueue("y")
    run_ready_jobs()
    assert not Job.objects.filter(pk=ok.id).exists()
    assert Job.objects.get(pk=bad.id).state == "failed"  # failed jobs are kept


def test_bulk_actions_take_a_fixed_number_of_queries_per_batch():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def failed_jobs(count):
        for i in range(count):
            fail.enqueue(i)
        run_ready_jobs()
        return Job.objects.filter(failed_execution__isnull=False)

    def count_queries(action, expected):
        with CaptureQueriesContext(connection) as captured:
            assert action() == expected
        return len(captured)

    # The same number of batches (4) for ten times the jobs: the same number of queries.
    jobs = failed_jobs(8)
    small = count_queries(lambda: jobs.retry_all(batch_size=2), 8)
    assert count_queries(lambda: Job.objects.all().discard_all(batch_size=2), 8) > 0
    jobs = failed_jobs(80)
    large = count_queries(lambda: jobs.retry_all(batch_size=20), 80)
    assert small == large
    first_eight = Job.objects.filter(pk__in=list(Job.objects.values_list("pk", flat=True)[:8]))
    small_discard = count_queries(lambda: first_eight.discard_all(batch_size=2), 8)
    large_discard = count_queries(lambda: Job.objects.all().discard_all(batch_size=18), 72)
    assert small_discard == large_discard


def test_discard_all_gives_semaphore_slots_back():
    holders = [one_at_a_time.enqueue(key) for key in ("a", "b")]
    waiting = [one_at_a_time.enqueue(key) for key in ("a", "b")]
    assert Job.objects.filter(pk__in=[h.id for h in holders]).discard_all() == 2
    assert [fresh(w).state for w in waiting] == ["ready", "ready"]
