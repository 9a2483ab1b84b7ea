"""The worker's ledger of claims on its own: what it runs and keeps, and how the claims
its main loop and its threads make stay within ``recycle_after_jobs``."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from steady_queue.processes.worker.ledger import Ledger
from steady_queue.processes.worker.recycling import Recycling


def job(job_id: int) -> SimpleNamespace:
    return SimpleNamespace(job_id=job_id)


def test_without_a_bound_the_main_loop_claims_for_all_its_room():
    ledger = Ledger(Recycling())

    assert ledger.reserve(7) == 7
    ledger.started([1, 2])
    assert ledger.running() == {1, 2}
    assert ledger.start_claiming()


def test_claims_in_flight_and_jobs_started_count_against_the_bound():
    recycling = Recycling(after_jobs=4)
    ledger = Ledger(recycling)
    ledger.started([1])
    assert ledger.start_claiming()  # a thread claims its next job: one of the three left

    assert ledger.reserve(10) == 2
    assert not ledger.start_claiming()  # the main loop's two and the thread's one: none left
    ledger.unreserve()
    ledger.ended(1, following=job(2), was_claiming=True)

    assert ledger.running() == {2} and recycling.started == 2
    assert ledger.reserve(10) == 2


def test_an_unrecorded_end_keeps_the_job_and_a_given_up_run_holds_it():
    ledger = Ledger(Recycling())
    ledger.started([1, 2, 3])
    ledger.ended(1, recorded=False)
    ended = threading.Event()
    ledger.given_up(SimpleNamespace(claimed=job(2), held=True, ended=ended))
    ledger.given_up(SimpleNamespace(claimed=job(3), held=False, ended=ended))

    assert ledger.running() == set()
    assert ledger._kept == {1} and set(ledger._held) == {2}
    ledger.ended(2)  # the stuck thread stopped after all
    assert ledger._held == {}


def test_no_new_claims_waits_for_the_claims_in_flight_and_refuses_more_meanwhile():
    ledger = Ledger(Recycling())
    assert ledger.start_claiming()
    inside = threading.Event()
    claimed_inside: list[bool] = []

    def pause() -> None:
        with ledger.no_new_claims():
            inside.set()
            claimed_inside.append(ledger.start_claiming())

    pausing = threading.Thread(target=pause)
    pausing.start()
    assert not inside.wait(0.2)  # a thread is still claiming
    ledger.ended(1, following=job(2), was_claiming=True)
    pausing.join(5)

    assert inside.is_set() and not pausing.is_alive() and claimed_inside == [False]
    assert ledger.running() == {2} and ledger.start_claiming()
