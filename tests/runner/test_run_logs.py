"""A running job's log: what its task logs (and prints) kept with its attempt, in batches."""

from __future__ import annotations

import logging
from datetime import timedelta

import django
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import steady_queue
from steady_queue.models import Job, JobLogLine
from steady_queue.runner import run_logs
from steady_queue.testing import run_ready_jobs
from tests.tasks import logging_tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def capturing(monkeypatch):
    """Install the capture as a worker does, with the settings a test sets first."""

    def install(**settings):
        for name, value in settings.items():
            monkeypatch.setattr(steady_queue, name, value)
        run_logs.install()

    yield install
    run_logs.uninstall()


def lines_of(result, attempt: int = 1) -> list[tuple[int, int, str, str]]:
    found = JobLogLine.objects.filter(job_id=int(result.id), attempt=attempt).order_by("number")
    return list(found.values_list("number", "level", "logger", "message"))


def test_what_a_task_logs_at_info_and_above_is_kept_with_its_attempt(capturing):
    capturing()
    result = logging_tasks.chatty.enqueue(3)
    run_ready_jobs()

    assert lines_of(result) == [
        (1, logging.INFO, "tests.tasks.logging_tasks", "line 1 of 3"),
        (2, logging.INFO, "tests.tasks.logging_tasks", "line 2 of 3"),
        (3, logging.INFO, "tests.tasks.logging_tasks", "line 3 of 3"),
    ]


def test_nothing_is_kept_without_the_capture_installed():
    result = logging_tasks.chatty.enqueue(3)
    run_ready_jobs()

    assert lines_of(result) == []


def test_records_below_the_level_are_not_kept_and_the_level_can_be_lowered(capturing):
    capturing()
    at_info = logging_tasks.levels.enqueue()
    run_ready_jobs()
    run_logs.uninstall()
    capturing(job_log_level=logging.DEBUG)
    at_debug = logging_tasks.levels.enqueue()
    run_ready_jobs()

    assert [line[3] for line in lines_of(at_info)] == ["an info record", "a warning record"]
    assert [line[3] for line in lines_of(at_debug)] == [
        "a debug record",
        "an info record",
        "a warning record",
    ]


def test_no_level_keeps_no_logging_records(capturing):
    capturing(job_log_level=None)
    result = logging_tasks.levels.enqueue()
    run_ready_jobs()

    assert lines_of(result) == []


def test_the_capture_does_not_hide_records_from_the_loggers_handlers(capturing, caplog):
    capturing()
    caplog.set_level(logging.INFO, logger="tests.tasks.logging_tasks")
    logging_tasks.chatty.enqueue(1)
    run_ready_jobs()

    assert "line 1 of 1" in caplog.messages


def test_prints_are_not_kept_by_default(capturing, capsys):
    capturing()
    result = logging_tasks.chatty.enqueue(0, printed="hello from print")
    run_ready_jobs()

    assert lines_of(result) == []
    assert "hello from print" in capsys.readouterr().out


def test_prints_are_kept_when_asked_and_still_written_out(capturing, capsys):
    capturing(job_log_print=True)
    result = logging_tasks.chatty.enqueue(0, printed="hello\nfrom print")
    run_ready_jobs()

    assert lines_of(result) == [
        (1, logging.INFO, "print", "hello"),
        (2, logging.INFO, "print", "from print"),
    ]
    assert "hello\nfrom print" in capsys.readouterr().out


def test_past_the_line_cap_the_oldest_lines_are_dropped(capturing):
    capturing(job_log_max_lines=5)
    result = logging_tasks.chatty.enqueue(12)
    run_ready_jobs()

    kept = lines_of(result)
    assert [line[0] for line in kept] == [8, 9, 10, 11, 12]
    # The first line kept is number 8: the reader's marker says 7 came before it.
    assert kept[0][3] == "line 8 of 12"


def test_past_the_byte_cap_the_oldest_lines_are_dropped(capturing):
    capturing(job_log_max_bytes=40)  # "line N of 9" is 11 bytes: three lines fit
    result = logging_tasks.chatty.enqueue(9)
    run_ready_jobs()

    assert [line[0] for line in lines_of(result)] == [7, 8, 9]


def test_lines_written_by_an_earlier_flush_are_deleted_past_the_cap(capturing):
    capturing(job_log_max_lines=4)
    job = Job.objects.create(task_path="tests.tasks.logging_tasks.chatty", queue_name="default")
    log = logging.getLogger("tests.tasks.logging_tasks")
    with run_logs.capture(job):
        for number in range(1, 4):
            log.info("early %d", number)
        assert run_logs.write() == 3
        for number in range(4, 8):
            log.info("late %d", number)

    kept = JobLogLine.objects.filter(job=job).order_by("number")
    assert [line.message for line in kept] == ["late 4", "late 5", "late 6", "late 7"]


TRANSACTION_CONTROL = {"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"}
DJANGO_52_SQLITE = django.VERSION < (6,) and connection.vendor == "sqlite"


def test_logging_costs_no_query_and_a_write_is_one_insert(capturing, django_assert_num_queries):
    capturing()
    job = Job.objects.create(task_path="tests.tasks.logging_tasks.chatty", queue_name="default")
    log = logging.getLogger("tests.tasks.logging_tasks")
    with run_logs.capture(job):
        with django_assert_num_queries(0):
            for number in range(200):
                log.info("line %d", number)
        with CaptureQueriesContext(connection) as written:
            assert run_logs.write() == 200
        # One INSERT for all 200 lines. Django 5.2's bulk_create also wraps it in a
        # transaction of its own and, on SQLite, keeps each INSERT under 999 parameters
        # (two for 200 lines).
        statements = [q["sql"].split()[0].upper() for q in written.captured_queries]
        inserts = [s for s in statements if s not in TRANSACTION_CONTROL]
        assert set(inserts) == {"INSERT"} and len(inserts) <= (2 if DJANGO_52_SQLITE else 1)
        with django_assert_num_queries(0):
            assert run_logs.write() == 0

    assert JobLogLine.objects.filter(job=job).count() == 200


def test_a_write_past_the_cap_is_one_insert_and_one_delete(
    capturing, django_assert_max_num_queries
):
    capturing(job_log_max_lines=10)
    job = Job.objects.create(task_path="tests.tasks.logging_tasks.chatty", queue_name="default")
    log = logging.getLogger("tests.tasks.logging_tasks")
    with run_logs.capture(job):
        for number in range(10):
            log.info("line %d", number)
        run_logs.write()
        for number in range(10, 15):
            log.info("line %d", number)
        # The insert and the delete, in one transaction (its begin and commit counted).
        with django_assert_max_num_queries(4):
            run_logs.write()

    assert JobLogLine.objects.filter(job=job).count() == 10


def test_records_outside_a_run_are_not_kept(capturing):
    capturing()
    logging.getLogger("tests.tasks.logging_tasks").warning("between runs")

    assert run_logs.write() == 0
    assert not JobLogLine.objects.exists()


def test_an_async_task_logs_to_its_own_job(capturing):
    capturing()
    result = logging_tasks.async_sleeps_until_released.enqueue("/")  # "/" exists: no wait
    run_ready_jobs()

    assert [line[3] for line in lines_of(result)] == ["async job started"]


def test_each_attempt_keeps_its_own_lines(capturing):
    capturing()
    result = logging_tasks.logs_then_fails.enqueue()
    run_ready_jobs()
    Job.objects.get(pk=result.id).retry()
    run_ready_jobs()

    assert [line[3] for line in lines_of(result, attempt=1)] == ["about to fail"]
    assert [line[3] for line in lines_of(result, attempt=2)] == ["about to fail"]


def test_a_failed_runs_exception_is_in_the_logged_record(capturing):
    capturing()
    job = Job.objects.create(task_path="tests.tasks.logging_tasks.chatty", queue_name="default")
    with run_logs.capture(job):
        try:
            raise KeyError("missing")
        except KeyError:
            logging.getLogger("tests").exception("it broke")

    (line,) = JobLogLine.objects.filter(job=job)
    assert line.level == logging.ERROR
    assert line.message.startswith("it broke\nTraceback")
    assert "KeyError: 'missing'" in line.message


def test_lines_are_deleted_with_their_job(capturing):
    capturing()
    result = logging_tasks.logs_then_fails.enqueue()
    run_ready_jobs()
    assert JobLogLine.objects.count() == 1

    Job.objects.get(pk=result.id).discard()

    assert not JobLogLine.objects.exists()


def test_lines_are_deleted_when_finished_jobs_are_cleared(capturing):
    capturing()
    result = logging_tasks.chatty.enqueue(2)
    kept = logging_tasks.chatty.enqueue(1)
    run_ready_jobs()
    Job.objects.filter(pk=kept.id).update(finished_at=timezone.now())
    Job.objects.filter(pk=result.id).update(finished_at=timezone.now() - timedelta(days=2))

    assert Job.objects.clear_finished_in_batches() == 1

    assert set(JobLogLine.objects.values_list("job_id", flat=True)) == {int(kept.id)}


def test_a_job_gone_while_it_ran_loses_its_lines_not_the_others(capturing):
    capturing()
    gone = Job.objects.create(task_path="tests.tasks.logging_tasks.chatty", queue_name="default")
    kept = Job.objects.create(task_path="tests.tasks.logging_tasks.chatty", queue_name="default")
    log = logging.getLogger("tests")
    with run_logs.capture(gone), run_logs.capture(kept):
        pass  # nested captures: the inner one is current
    first = run_logs.RunLog(job_id=gone.pk, attempt=1, code=None)
    second = run_logs.RunLog(job_id=kept.pk, attempt=1, code=None)
    first.add(logging.INFO, "tests", "to a job that is gone")
    second.add(logging.INFO, "tests", "to a job that is kept")
    Job.objects.filter(pk=gone.pk).delete()
    log.info("not in a run")

    assert run_logs.write([first, second]) == 2

    assert list(JobLogLine.objects.values_list("message", flat=True)) == ["to a job that is kept"]


def test_a_root_logger_above_the_level_is_lowered_and_its_handlers_keep_their_level():
    root = logging.getLogger()
    handler = logging.NullHandler()
    saved = root.level
    root.setLevel(logging.WARNING)
    root.addHandler(handler)
    try:
        run_logs.install()
        assert root.level == logging.INFO
        assert handler.level == logging.WARNING  # shows what it showed before
        run_logs.uninstall()
        assert root.level == logging.WARNING
        assert handler.level == logging.NOTSET
    finally:
        run_logs.uninstall()
        root.removeHandler(handler)
        root.setLevel(saved)


def test_what_a_task_prints_to_stderr_is_kept_apart(capturing):
    capturing(job_log_print=True)
    job = Job.objects.create(task_path="tests.tasks.logging_tasks.chatty", queue_name="default")
    import sys

    with run_logs.capture(job):
        sys.stderr.write("no newline at the end")

    (line,) = JobLogLine.objects.filter(job=job)
    assert (line.logger, line.message) == ("print.stderr", "no newline at the end")


def test_lines_dropped_before_a_write_are_not_kept_in_memory(capturing):
    capturing(job_log_max_lines=3)
    run = run_logs.RunLog(job_id=1, attempt=1, code=None)
    for number in range(1000):
        run.add(logging.INFO, "tests", f"line {number}")

    lines, dropped = run.take()
    assert [line.message for line in lines] == ["line 997", "line 998", "line 999"]
    assert dropped is None  # none of the dropped lines was written
