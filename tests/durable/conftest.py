from __future__ import annotations

import pytest

from tests.tasks import durable


@pytest.fixture(autouse=True)
def _fresh_plans():
    durable.BODIES.clear()
    durable.RAISED.clear()
    yield
    durable.BODIES.clear()
    durable.RAISED.clear()
