"""A bad retention rule is a system-check error that names it, and pruning refuses to run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

import steady_queue
from steady_queue.checks.retention import check_retention_rules
from steady_queue.retention import Retention
from steady_queue.retention.pruning import Pruning

DAY = timedelta(days=1)


def test_no_rules_and_good_rules_pass(monkeypatch):
    assert check_retention_rules() == []
    monkeypatch.setattr(
        steady_queue,
        "retention_rules",
        [
            Retention(state="succeeded", keep=DAY),
            Retention(state="failed", keep=30 * DAY, archive=True),
            Retention(state="cancelled", keep=None),
            Retention(task="tests.tasks.noop", state="succeeded", keep=90 * DAY),
            Retention(queue="background", state="succeeded", keep=timedelta(hours=1)),
            Retention(queue="background", state="failed", keep=DAY),
        ],
    )
    assert check_retention_rules() == []


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        (Retention(state="failed", keep=-DAY), "it may not be negative"),
        (Retention(state="exploded", keep=DAY), "not one of succeeded, failed or cancelled"),
        (Retention(state="discarded", keep=DAY), "discarded jobs have no rows"),
        (Retention(state="failed", keep=30), "a timedelta, or None"),
        (Retention(state="failed", keep=DAY, archive="yes"), "True or False"),
        (Retention(state="failed", keep=DAY, task="tests.tasks.nope"), "cannot be imported"),
        (Retention(state="failed", keep=DAY, task="tests.tasks.CALLS"), "is not a Task"),
        (Retention(state="failed", keep=DAY, task="tests.tasks.noop", queue="q"), "not both"),
        (Retention(state="failed", keep=DAY, queue=""), "a non-empty string"),
    ],
)
def test_a_bad_rule_is_an_error_naming_it(monkeypatch, rule, said):
    monkeypatch.setattr(steady_queue, "retention_rules", [rule])

    (error,) = check_retention_rules()

    assert error.id == "steady_queue.E350"
    assert repr(rule) in error.msg and said in error.msg
    with pytest.raises(ImproperlyConfigured, match="Not pruning"):
        Pruning()


def test_two_rules_for_the_same_scope_are_an_error_naming_both(monkeypatch):
    first = Retention(queue="background", state="succeeded", keep=DAY)
    second = Retention(queue="background", state="finished", keep=2 * DAY)
    monkeypatch.setattr(steady_queue, "retention_rules", [first, second])

    (error,) = check_retention_rules()

    assert repr(first) in error.msg and repr(second) in error.msg
    assert "the same scope" in error.msg


def test_rules_that_are_not_a_list_of_rules_are_errors(monkeypatch):
    monkeypatch.setattr(steady_queue, "retention_rules", {"state": "failed"})
    (error,) = check_retention_rules()
    assert "a list of Retention rules" in error.msg
    monkeypatch.setattr(steady_queue, "retention_rules", [("failed", DAY)])
    (error,) = check_retention_rules()
    assert "retention_rules[0] is ('failed'" in error.msg


def test_succeeded_rules_without_preserved_successes_are_warned_about(monkeypatch):
    monkeypatch.setattr(steady_queue, "preserve_finished_jobs", False)
    monkeypatch.setattr(
        steady_queue, "retention_rules", [Retention(state="succeeded", keep=90 * DAY)]
    )
    (warning,) = check_retention_rules()
    assert warning.id == "steady_queue.W351"


@pytest.mark.django_db
def test_manage_py_check_reports_the_rule(monkeypatch):
    from django.core.management.base import SystemCheckError

    monkeypatch.setattr(steady_queue, "retention_rules", [Retention(state="failed", keep=-DAY)])
    with pytest.raises(SystemCheckError, match=r"steady_queue\.E350"):
        call_command("check")
