"""How long a worker with idle threads waits for its next poll, by what wakes it."""

from __future__ import annotations

import pytest

from steady_queue.processes import pacing


def waits(pace: pacing.Fixed, found: list[int]) -> list[float]:
    return [pace.after_poll(count) for count in found]


def test_a_notified_worker_polls_every_polling_interval():
    pace = pacing.choose(0.1, notified=True, signalled=False)

    assert waits(pace, [0, 3, 0]) == [0.1, 0.1, 0.1]


def test_a_signalled_worker_polls_rarely_in_case_a_write_went_unseen():
    pace = pacing.choose(0.1, notified=False, signalled=True)

    assert waits(pace, [0, 3, 0]) == [5.0, 5.0, 5.0]
    assert pacing.choose(30, notified=False, signalled=True).after_poll(0) == 30


def test_a_polling_worker_tightens_after_activity_and_relaxes_back_while_idle():
    pace = pacing.choose(0.1, notified=False, signalled=False)

    found = [0, 2, 0, 0, 0, 0, 0, 0]
    assert waits(pace, found) == pytest.approx([0.1, 0.01, 0.02, 0.04, 0.08, 0.1, 0.1, 0.1])


def test_a_polling_interval_shorter_than_the_active_one_is_kept():
    pace = pacing.choose(0.005, notified=False, signalled=False)

    assert waits(pace, [1, 0]) == [0.005, 0.005]
