from __future__ import annotations

import pytest

from tests import tasks


@pytest.fixture(autouse=True)
def _reset_calls():
    tasks.CALLS.clear()
    yield
    tasks.CALLS.clear()
