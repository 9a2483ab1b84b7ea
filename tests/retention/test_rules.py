"""Which rule keeps which job: state, specificity (task > queue > default), defaults."""

from __future__ import annotations

from datetime import timedelta

import pytest

import steady_queue
from steady_queue.models import Job, PruneTally, states
from steady_queue.retention import Retention, effective_rules
from steady_queue.retention.pruning import prune
from steady_queue.testing import run_ready_jobs
from tests import tasks

from .helpers import alive, cancelled, failed, finished

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def _no_rules(monkeypatch):
    monkeypatch.setattr(steady_queue, "retention_rules", [])


def test_without_rules_succeeded_jobs_keep_clear_finished_jobs_after_and_failures_stay(
    monkeypatch,
):
    monkeypatch.setattr(steady_queue, "clear_finished_jobs_after", 2 * DAY)
    old, recent = finished(3 * DAY), finished(1 * DAY)
    old_failure, old_cancel = failed(300 * DAY), cancelled(300 * DAY)

    [removed] = prune(pause=0)

    assert alive(old, recent, old_failure, old_cancel) == {recent, old_failure, old_cancel}
    assert (removed.rule, removed.removed) == ("succeeded jobs kept 2 days", 1)


def test_a_default_rule_for_succeeded_replaces_clear_finished_jobs_after(monkeypatch):
    monkeypatch.setattr(steady_queue, "clear_finished_jobs_after", 10 * DAY)
    monkeypatch.setattr(
        steady_queue, "retention_rules", [Retention(state="succeeded", keep=timedelta(hours=1))]
    )
    day_old = finished(DAY)
    prune(pause=0)
    assert alive(day_old) == set()


def test_failed_and_cancelled_rules_prune_only_their_state(monkeypatch):
    monkeypatch_rules = [
        Retention(state="failed", keep=30 * DAY),
        Retention(state="cancelled", keep=7 * DAY),
    ]
    monkeypatch.setattr(steady_queue, "retention_rules", monkeypatch_rules)
    old_failure, new_failure = failed(31 * DAY), failed(29 * DAY)
    old_cancel, new_cancel = cancelled(8 * DAY), cancelled(6 * DAY)
    old_mid_failure = failed(8 * DAY)

    results = {r.rule: r.removed for r in prune(pause=0)}

    assert alive(old_failure, new_failure, old_cancel, new_cancel, old_mid_failure) == {
        new_failure,
        new_cancel,
        old_mid_failure,
    }
    assert results == {"failed jobs kept 30 days": 1, "cancelled jobs kept 7 days": 1}


def test_the_most_specific_rule_wins_task_then_queue_then_default(monkeypatch):
    monkeypatch.setattr(
        steady_queue,
        "retention_rules",
        [
            Retention(state="succeeded", keep=5 * DAY),
            Retention(queue="background", state="succeeded", keep=timedelta(hours=1)),
            Retention(task="tests.tasks.add", state="succeeded", keep=90 * DAY),
        ],
    )
    add_on_bulk = finished(10 * DAY, tasks.add, queue="background", a=1, b=2)
    add_default = finished(10 * DAY, tasks.add, a=1, b=2)
    add_very_old = finished(91 * DAY, tasks.add, queue="background", a=1, b=2)
    noop_on_bulk = finished(2 * DAY, queue="background")
    noop_default_young = finished(2 * DAY)
    noop_default_old = finished(6 * DAY)

    prune(pause=0)

    assert alive(
        add_on_bulk, add_default, add_very_old, noop_on_bulk, noop_default_young, noop_default_old
    ) == {add_on_bulk, add_default, noop_default_young}


def test_keep_none_keeps_for_ever(monkeypatch):
    monkeypatch.setattr(
        steady_queue,
        "retention_rules",
        [Retention(task="tests.tasks.noop", state="succeeded", keep=None)],
    )
    kept, other = finished(1000 * DAY), finished(1000 * DAY, tasks.add, a=1, b=1)
    prune(pause=0)
    assert alive(kept, other) == {kept}


def test_preserve_finished_jobs_false_deletes_successes_at_once_and_pruning_has_none(
    monkeypatch,
):
    monkeypatch.setattr(steady_queue, "preserve_finished_jobs", False)
    result = tasks.noop.enqueue()
    run_ready_jobs()
    assert not Job.objects.filter(pk=result.id).exists()
    assert prune(pause=0) == []
    assert not PruneTally.objects.exists()


def test_each_rule_that_removed_something_leaves_a_tally_the_console_can_sum(monkeypatch):
    monkeypatch.setattr(steady_queue, "retention_rules", [Retention(state="failed", keep=DAY)])
    for _ in range(3):
        finished(2 * DAY)
    failed(2 * DAY)
    prune(batch_size=2, pause=0)

    summary = {(t.rule, t.kind): (t.removed, t.archived) for t in PruneTally.summary()}
    assert summary == {
        ("succeeded jobs kept 1 day", "jobs"): (3, 0),
        ("failed jobs kept 1 day", "jobs"): (1, 0),
    }
    assert PruneTally.summary(since=timezone_now_plus_a_minute()) == []


def timezone_now_plus_a_minute():
    from django.utils import timezone

    return timezone.now() + timedelta(minutes=1)


def test_the_effective_rules_fill_in_each_state_default_most_specific_first(monkeypatch):
    monkeypatch.setattr(steady_queue, "clear_finished_jobs_after", 2 * DAY)
    rules = [
        Retention(state="failed", keep=30 * DAY, archive=True),
        Retention(queue="background", state="succeeded", keep=timedelta(hours=1)),
    ]
    described = [rule.describe() for rule in effective_rules(rules)]
    assert described == [
        "succeeded jobs on queue background kept 1 hour",
        "succeeded jobs kept 2 days",
        "failed jobs kept 30 days, then archived",
        "cancelled jobs kept for ever",
    ]
    assert Retention(state="finished", keep=DAY).job_state == states.FINISHED
