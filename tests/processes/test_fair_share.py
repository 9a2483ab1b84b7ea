"""Fair share with the real supervisor: the noisy neighbour at small scale.

Tenant A enqueues 300 jobs at once, then tenant B three: with ``@fair`` B's jobs start
within the first rounds, long before A's backlog is 10% done (FIFO would start them
last). Two worker processes of four threads claim; start times are the tasks' own.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from steady_queue.backend import enqueue_all
from tests.processes.conftest import finished_count, wait_until

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

BACKLOG = 300


def starts(path: Path) -> list[tuple[float, str]]:
    lines = [line.split() for line in path.read_text().splitlines()]
    assert len(lines) == len({label for _, label, _ in lines}), "a job ran twice"
    return sorted((float(at), label) for _, label, at in lines)


def test_a_small_tenant_starts_before_a_floods_backlog_is_ten_percent_done(
    fair_share, start_supervisor, tmp_path
):
    log = tmp_path / "starts.log"
    log.touch()
    supervisor = start_supervisor("SCALE", children=2)

    enqueue_all([(fair_share.stamped, ("A", str(log), str(n)), {}) for n in range(BACKLOG)])
    enqueue_all([(fair_share.stamped, ("B", str(log), str(n)), {}) for n in range(3)])
    wait_until(lambda: finished_count() == BACKLOG + 3, timeout=120, what="every job finished")

    order = [label for _, label in starts(log)]
    assert len(order) == BACKLOG + 3
    last_b = max(order.index(f"B-{n}") for n in range(3))
    a_before = sum(1 for label in order[:last_b] if label.startswith("A-"))
    assert a_before < BACKLOG // 10, f"{a_before} of A's jobs started before B's last"
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
