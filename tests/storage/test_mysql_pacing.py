"""An idle worker's polls on MySQL/MariaDB: faster at the default polling interval.

Nothing wakes a MySQL worker, and its poll is one round trip: left at the default
``polling_interval`` it polls every ``MysqlStorage.idle_polling_interval``; an interval
the user chose is kept, and the other storages keep the default.
"""

from __future__ import annotations

import pytest

from steady_queue.processes import pacing
from steady_queue.storage.base import Storage
from steady_queue.storage.mysql import MysqlStorage


def waits(pace: pacing.Fixed, found: list[int]) -> list[float]:
    return [pace.after_poll(count) for count in found]


def test_at_the_default_interval_an_idle_mysql_worker_polls_at_the_storages_pace():
    pace = pacing.choose(
        pacing.DEFAULT_POLLING_INTERVAL,
        notified=False,
        signalled=False,
        idle_polling_interval=MysqlStorage.idle_polling_interval,
    )

    assert waits(pace, [0, 2, 0, 0, 0, 0]) == pytest.approx([0.03, 0.01, 0.02, 0.03, 0.03, 0.03])


def test_an_interval_the_user_chose_is_kept():
    pace = pacing.choose(0.5, notified=False, signalled=False, idle_polling_interval=0.03)

    assert waits(pace, [0, 1, 0]) == pytest.approx([0.5, 0.01, 0.02])


def test_the_other_storages_poll_every_polling_interval():
    assert Storage.idle_polling_interval is None
    pace = pacing.choose(
        pacing.DEFAULT_POLLING_INTERVAL,
        notified=False,
        signalled=False,
        idle_polling_interval=Storage.idle_polling_interval,
    )

    assert waits(pace, [0, 0]) == [0.1, 0.1]
