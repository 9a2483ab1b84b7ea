"""What fair share costs in statements: nothing on the FIFO path, a bounded few when in use.

The FIFO figures are those of tests/test_enqueue.py and tests/storage/test_fast_paths.py
(no @fair task in use: the storages' fast paths, unchanged). With fair share in use,
an enqueue takes the same fast path plus two reads (the keys' weights, and V and each
key's last tag, one statement for every key of the call), its ready rows written with
their places by the same statements; the claim is the same statement, in the new order.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.backend import enqueue_all
from tests import tasks

from .conftest import enqueue_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def count(action) -> int:
    with CaptureQueriesContext(connection) as queries:
        action()
    return len(queries.captured_queries)


#: FIFO path (no @fair task in use), per database: one enqueue, a bulk enqueue (any
#: size), a claim of several jobs. The same figures as before fair share existed.
FIFO = {"postgresql": (1, 5, 1), "mysql": (1, 2, 1), "sqlite": (4, 4, 4)}
#: With fair share in use, an enqueue (one job, or many of several keys): the FIFO
#: path's statements plus two reads: the weights set, and V and the keys' last tags.
FAIR_READS = 2


def test_the_fifo_path_sends_what_it_sent_before_fair_share():
    single, bulk, claim = FIFO[connection.vendor]
    enqueue_all([(tasks.add, (i, i), {}) for i in range(2)])  # MySQL reads a setting once

    assert count(lambda: tasks.add.enqueue(1, 2)) == single
    assert count(lambda: enqueue_all([(tasks.add, (i, i), {}) for i in range(5)])) == bulk
    # 40 jobs: Django 5.2 splits an SQLite INSERT past 999 parameters (43 jobs' rows).
    assert count(lambda: enqueue_all([(tasks.add, (i, i), {}) for i in range(40)])) == bulk
    assert count(lambda: storage.claim(["*"], 6, None)) == claim


def test_with_fair_share_an_enqueue_adds_two_reads_to_the_fast_path(fair):
    single, bulk, _ = FIFO[connection.vendor]
    enqueue_all([(tasks.add, (i, i), {}) for i in range(2)])  # MySQL reads a setting once

    assert count(lambda: fair.by_tenant.enqueue("A")) == single + FAIR_READS
    many = [(fair.by_tenant, (f"k{i % 5}",), {"n": i}) for i in range(40)]
    assert count(lambda: enqueue_all(many)) == bulk + FAIR_READS
    # A job of a task without @fair is tagged too (one more key, ""), the same way.
    assert count(lambda: tasks.add.enqueue(1, 2)) == single + FAIR_READS


def test_with_fair_share_a_claim_is_the_same_statement(fair):
    enqueue_tenant(fair.by_tenant, "A", 3)
    enqueue_tenant(fair.by_tenant, "B", 3)

    assert count(lambda: storage.claim(["*"], 6, None)) == FIFO[connection.vendor][2]
