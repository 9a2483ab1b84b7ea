"""``manage.py steady_queue_prune [--dry-run]``, and the dispatcher's pruning pass."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

import steady_queue
from steady_queue.models import ArchivedJob, Job, PruneTally
from steady_queue.processes.dispatcher import Dispatcher
from steady_queue.retention import Retention
from steady_queue.retention.pruning import Pruning

from .helpers import alive, failed, finished

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def _rules(monkeypatch):
    monkeypatch.setattr(
        steady_queue,
        "retention_rules",
        [
            Retention(state="succeeded", keep=DAY),
            Retention(state="failed", keep=30 * DAY, archive=True),
        ],
    )


def prune_command(*args: str) -> str:
    out = io.StringIO()
    call_command("steady_queue_prune", *args, stdout=out)
    return out.getvalue()


def test_a_dry_run_prints_per_rule_what_would_go_and_writes_nothing():
    old = [finished(2 * DAY) for _ in range(3)]
    old_failure, young = failed(31 * DAY), finished(timedelta(0))
    jobs_before = Job.objects.count()

    with CaptureQueriesContext(connection) as captured:
        output = prune_command("--dry-run")

    lines = {line.split("  ")[0]: line.split() for line in output.splitlines()}
    assert lines["succeeded jobs kept 1 day"][-2:] == ["3", "0"]
    assert lines["failed jobs kept 30 days, then archived"][-2:] == ["1", "0"]
    assert "Total" in output and output.splitlines()[-1].split()[-1] == "4"
    writes = [q["sql"] for q in captured if not q["sql"].lstrip().upper().startswith("SELECT")]
    assert writes == []
    assert Job.objects.count() == jobs_before
    assert alive(*old, old_failure, young) == {*old, old_failure, young}
    assert not PruneTally.objects.exists() and not ArchivedJob.objects.exists()


def test_a_real_run_removes_archives_and_prints_what_it_did():
    old, old_failure = finished(2 * DAY), failed(31 * DAY)
    output = prune_command("--batch-size", "1")
    assert alive(old, old_failure) == set()
    assert ArchivedJob.objects.filter(job_id=old_failure).exists()
    assert "succeeded jobs kept 1 day" in output
    assert output.splitlines()[-1].split()[-1] == "2"


@pytest.mark.parametrize(
    ("args", "rules"),
    [
        ((), [Retention(state="failed", keep=-DAY)]),
        (("--dry-run",), [Retention(state="nope", keep=DAY)]),
        (("--batch-size", "0"), []),
        (("--backend", "no_such_backend"), []),
    ],
)
def test_bad_rules_or_arguments_exit_with_status_2_and_remove_nothing(monkeypatch, args, rules):
    monkeypatch.setattr(steady_queue, "retention_rules", rules)
    old = finished(30 * DAY)
    with pytest.raises(CommandError) as raised:
        prune_command(*args)
    assert raised.value.returncode == 2
    assert alive(old) == {old}


def test_a_batch_of_plain_deletes_costs_the_same_statements_whatever_its_size():
    def statements(count: int) -> int:
        ids = [finished(2 * DAY) for _ in range(count)]
        pruning = Pruning(batch_size=count)
        with CaptureQueriesContext(connection) as captured:
            assert pruning.step()
        assert alive(*ids) == set()
        pruning.close()
        return len(captured)

    one, many = statements(1), statements(25)
    assert one == many
    # The ids read, the lock, a delete per table pointing at jobs, the jobs' delete.
    assert many <= len(Job._meta.related_objects) + 3 + 4  # + BEGIN/COMMIT or savepoints


def test_the_dispatcher_prunes_one_batch_a_poll_and_records_the_pass(monkeypatch):
    monkeypatch.setattr(steady_queue, "prune_batch_size", 2)
    monkeypatch.setattr(steady_queue, "prune_pause", timedelta(milliseconds=5))
    old = [finished(2 * DAY) for _ in range(5)]
    dispatcher = Dispatcher(polling_interval=1, concurrency_maintenance=False)

    waits = [dispatcher.poll()]
    assert len(alive(*old)) == 3  # one batch of two
    while dispatcher.pruning is not None:
        waits.append(dispatcher.poll())

    assert alive(*old) == set()
    assert waits[0] == 0.005  # the next batch after the pause, not a poll later
    [tally] = PruneTally.objects.all()
    assert (tally.rule, tally.removed) == ("succeeded jobs kept 1 day", 5)
    assert dispatcher.poll() == 1  # the next pass is an interval away
    assert not dispatcher._prune_when_due()


def test_a_dispatcher_stopping_mid_pass_records_what_it_removed(monkeypatch):
    monkeypatch.setattr(steady_queue, "prune_batch_size", 2)
    old = [finished(2 * DAY) for _ in range(5)]
    dispatcher = Dispatcher(polling_interval=1, concurrency_maintenance=False)
    dispatcher.poll()
    dispatcher.on_shutdown()
    assert len(alive(*old)) == 3
    assert PruneTally.objects.get().removed == 2


def test_a_dispatcher_with_bad_rules_prunes_nothing_and_goes_on(monkeypatch, caplog):
    monkeypatch.setattr(steady_queue, "retention_rules", [Retention(state="x", keep=DAY)])
    old = finished(2 * DAY)
    dispatcher = Dispatcher(polling_interval=1, concurrency_maintenance=False)
    assert dispatcher.poll() == 1
    assert alive(old) == {old}
    assert "Not pruning" in caplog.text


def test_prune_interval_none_turns_the_dispatchers_pruning_off(monkeypatch):
    monkeypatch.setattr(steady_queue, "prune_interval", None)
    old = finished(2 * DAY)
    Dispatcher(polling_interval=1, concurrency_maintenance=False).poll()
    assert alive(old) == {old}


def test_a_failing_pass_is_logged_and_dispatching_goes_on(monkeypatch, caplog):
    old = finished(2 * DAY)

    def broken(self):
        raise RuntimeError("the archive table is gone")
        yield True  # a generator, as the real one

    monkeypatch.setattr(Pruning, "_batches", broken)
    dispatcher = Dispatcher(polling_interval=1, concurrency_maintenance=False)
    assert dispatcher.poll() == 1
    assert dispatcher.pruning is None and alive(old) == {old}
    assert "Pruning failed" in caplog.text and "the archive table is gone" in caplog.text
