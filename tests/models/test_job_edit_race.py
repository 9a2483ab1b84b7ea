"""An edit racing a worker's claim: exactly one wins, the run never sees a mix of values."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from steady_queue import db, storage
from steady_queue.exceptions import JobNotEditable
from steady_queue.models import ClaimedExecution, Job, ReadyExecution
from steady_queue.runner.perform import perform
from tests import tasks
from tests.at_once import at_once

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 100
OLD = ((0, "old"), {"v": "old"})
NEW = ((1, "new"), {"v": "new"})


def test_an_edit_racing_a_claim_either_wins_whole_or_is_refused():
    outcomes = {"edited": 0, "refused": 0}
    for _ in range(ROUNDS):
        tasks.CALLS.clear()
        result = tasks.echo.enqueue(*OLD[0], **OLD[1])
        editable = Job.objects.get(pk=result.id)
        seen: dict[str, object] = {}

        def race(side: str, job=editable, seen=seen) -> None:
            if side == "claim":
                claimed = storage.claim(["*"], 1, None)
                seen["claimed"] = len(claimed)
                for execution in claimed:
                    perform(execution)
                return
            try:
                job.edit(args=list(NEW[0]), kwargs=NEW[1], priority=3)
                seen["edit"] = "edited"
            except JobNotEditable as exc:
                seen["edit"] = "refused"
                seen["message"] = str(exc)

        assert at_once(race, ["claim", "edit"]) == []
        if not seen["claimed"]:  # the edit held the row: the claim skipped it
            assert seen["edit"] == "edited"
            for execution in storage.claim(["*"], 10, None):
                perform(execution)
        outcomes[seen["edit"]] += 1
        # One run, with the values of one side whole.
        assert len(tasks.CALLS) == 1
        expected = NEW if seen["edit"] == "edited" else OLD
        assert tasks.CALLS[0] == expected
        if seen["edit"] == "refused":  # claimed first: it ran, or runs, or is being claimed
            assert any(
                words in seen["message"]
                for words in ("being claimed or started", "is running", "is finished")
            ), seen["message"]
        finished = Job.objects.get(pk=result.id)
        assert finished.finished_at is not None
        assert len(finished.attempts) == 1
        assert not ClaimedExecution.objects.exists() and not ReadyExecution.objects.exists()
    assert sum(outcomes.values()) == ROUNDS


@pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite locks the whole database, not a row"
)
def test_a_ready_row_a_claim_holds_makes_the_edit_refuse_at_once():
    result = tasks.echo.enqueue(1)
    held, release = threading.Event(), threading.Event()

    def claim_in_progress() -> None:
        try:
            with db.atomic():
                list(ReadyExecution.objects.filter(job_id=result.id).locked())
                held.set()
                release.wait(timeout=10)
        finally:
            connections.close_all()

    claimer = threading.Thread(target=claim_in_progress)
    claimer.start()
    try:
        assert held.wait(timeout=10)
        with pytest.raises(JobNotEditable, match="being claimed or started") as raised:
            Job.objects.get(pk=result.id).edit(args=[2])
        assert raised.value.state == "ready"
    finally:
        release.set()
        claimer.join(timeout=10)
    assert Job.objects.get(pk=result.id).arguments["args"] == [1]
