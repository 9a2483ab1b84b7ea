"""A signal sent while the run that begins to wait is ending is never lost."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from steady_queue.durable import send_signal
from steady_queue.models import states
from steady_queue.models.execution.outcomes import WaitForSignal
from steady_queue.testing import run_ready_jobs
from tests.durable.helpers import job, run, state
from tests.tasks import durable as tasks

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = [["wait", "go", None], ["step", "b"]]


def sender(result, payload, errors: list) -> threading.Thread:
    def send():
        try:
            send_signal(result, "go", payload)
        except BaseException as exc:  # seen by the test
            errors.append(exc)
        finally:
            connections.close_all()

    return threading.Thread(target=send)


@pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite locks the whole database, not a row"
)
def test_a_signal_sent_before_the_ending_run_stores_its_wait_makes_the_job_due(monkeypatch):
    result, errors = tasks.scripted.enqueue(PLAN), []
    store = WaitForSignal.store

    def signal_first(self, claimed, attempt):
        thread = sender(result, "early", errors)
        thread.start()
        thread.join(30)  # the job's row is not locked yet: the signal commits
        assert not thread.is_alive()
        return store(self, claimed, attempt)

    monkeypatch.setattr(WaitForSignal, "store", signal_first)
    run()
    assert errors == []
    assert state(result) == states.FINISHED
    assert job(result).return_value == ["early", "b-result"]


def test_a_signal_sent_while_the_ending_run_stores_its_wait_finds_the_job_waiting(monkeypatch):
    result, errors = tasks.scripted.enqueue(PLAN), []
    store, threads = WaitForSignal.store, []

    def signal_meanwhile(self, claimed, attempt):
        stored = store(self, claimed, attempt)  # the job's row is locked now
        threads.append(sender(result, "meanwhile", errors))
        threads[0].start()  # waits for the lock: sees the job waiting once this commits
        return stored

    monkeypatch.setattr(WaitForSignal, "store", signal_meanwhile)
    run_ready_jobs(max_jobs=1)
    threads[0].join(30)
    assert not threads[0].is_alive() and errors == []
    assert state(result) == states.READY
    monkeypatch.undo()
    run()
    assert job(result).return_value == ["meanwhile", "b-result"]
