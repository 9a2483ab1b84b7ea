"""The registry of execution kinds (``steady_queue.models.states``): complete, looked up
by word or old spelling, and refusing a kind it does not know or a word with no table."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import models

from steady_queue.compat import TaskResultStatus
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    PausedExecution,
    ReadyExecution,
    ScheduledExecution,
    ThrottledExecution,
    WaitingExecution,
    states,
)
from steady_queue.models.execution import Execution


def test_every_execution_table_is_registered_once_in_order():
    tables = {
        model
        for model in apps.get_app_config("steady_queue").get_models()
        if issubclass(model, Execution)
    }
    kinds = states.kinds()
    assert {kind.model for kind in kinds} == tables
    assert len(kinds) == len(tables) == 8
    assert [kind.name for kind in kinds] == list(states.KIND_ORDER)
    assert [kind.model for kind in kinds] == [
        ReadyExecution,
        ScheduledExecution,
        ClaimedExecution,
        BlockedExecution,
        ThrottledExecution,
        PausedExecution,
        WaitingExecution,
        FailedExecution,
    ]


def test_each_table_declares_its_facts_once():
    running = states.get(states.RUNNING)
    assert (running.model, running.relation, running.slug) == (
        ClaimedExecution,
        "claimed_execution",
        "running",
    )
    assert ClaimedExecution.state_name == "running"
    assert ClaimedExecution.task_status == TaskResultStatus.RUNNING
    assert states.names_where("started") == ("running",)
    assert "running" not in states.names_where("discardable")
    assert states.names_where("retryable") == ("failed",)
    assert "failed" not in states.names_where("cancellable")
    assert states.get("blocked").entered_lookup == "blocked_execution__created_at"
    assert states.of_model(WaitingExecution).name == "waiting"


def test_the_job_level_states_follow_the_kinds():
    assert states.words() == (
        "ready",
        "scheduled",
        "running",
        "blocked",
        "throttled",
        "paused",
        "waiting",
        "failed",
        "cancelled",
        "finished",
    )
    assert states.get("cancelled").relation == "failed_execution"
    assert states.get("finished").relation is None


@pytest.mark.parametrize(("old", "word"), [("pending", "ready"), ("in-progress", "running")])
def test_an_old_spelling_finds_the_state_of_its_canonical_word(old, word):
    assert states.canonical(old) == word
    assert states.get(old) is states.get(word)
    assert old in states.words(accepting_aliases=True)
    assert old not in states.words()


def test_an_unknown_word_is_no_state():
    with pytest.raises(KeyError):
        states.get("claimed")


def test_a_table_declaring_a_state_the_registry_does_not_list_fails_at_import():
    before = dict(states._registered)
    with pytest.raises(ImproperlyConfigured, match=r"'parked'.*KIND_ORDER"):

        class ParkedExecution(Execution, state="parked", task_status=TaskResultStatus.READY):
            job = models.OneToOneField("steady_queue.Job", on_delete=models.CASCADE)

            class Meta:
                app_label = "steady_queue"

    assert states._registered == before
    assert len(states.kinds()) == 8


def test_a_second_table_for_a_state_fails_at_import():
    with pytest.raises(ImproperlyConfigured, match="both declare 'ready'"):

        class OtherReadyExecution(Execution, state="ready", task_status=TaskResultStatus.READY):
            job = models.OneToOneField("steady_queue.Job", on_delete=models.CASCADE)

            class Meta:
                app_label = "steady_queue"

    assert states.get("ready").model is ReadyExecution


def test_a_table_must_declare_its_state():
    with pytest.raises(TypeError, match="state"):

        class Undeclared(Execution):
            job = models.OneToOneField("steady_queue.Job", on_delete=models.CASCADE)

            class Meta:
                app_label = "steady_queue"


def test_a_registered_word_without_its_table_fails_the_seal():
    # models/__init__ seals the registry once every table is loaded: a word of
    # KIND_ORDER no table declares stops the import there.
    without_waiting = {k.name: k for k in states.kinds() if k.name != states.WAITING}
    with pytest.raises(ImproperlyConfigured, match="waiting"):
        states.seal(without_waiting)
    assert states.seal() == states.kinds()
