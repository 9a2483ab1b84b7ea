"""A naive datetime argument while USE_TZ is on: warned about and read in the default
time zone, as Django's DateTimeField does (issue 25, item 18)."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from steady_queue.compat import TaskResultStatus
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)

NAIVE = datetime(2024, 7, 1, 9, 30)


def _run_echo(*args, **kwargs):
    result = tasks.echo.enqueue(*args, **kwargs)
    run_ready_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    return tasks.CALLS[-1]


def test_a_naive_datetime_warns_and_is_read_in_the_default_time_zone(settings):
    settings.TIME_ZONE = "Europe/Paris"

    with pytest.warns(RuntimeWarning, match="received a naive datetime") as warned:
        args, kwargs = _run_echo(NAIVE, when=NAIVE)

    assert len(warned) == 2
    assert "args[0]" in str(warned[0].message) and "kwargs['when']" in str(warned[1].message)
    assert "while time zone support is active" in str(warned[0].message)
    paris = NAIVE.replace(tzinfo=ZoneInfo("Europe/Paris"))
    assert args == (paris,) and kwargs == {"when": paris}
    assert args[0].astimezone(UTC) == datetime(2024, 7, 1, 7, 30, tzinfo=UTC)


def test_without_time_zone_support_a_naive_datetime_stays_naive(settings):
    settings.USE_TZ = False

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        args, _ = _run_echo(NAIVE)

    assert args == (NAIVE,) and args[0].tzinfo is None


def test_an_aware_datetime_raises_no_warning():
    aware = NAIVE.replace(tzinfo=UTC)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        args, _ = _run_echo(aware)

    assert args == (aware,)
