"""Edited arguments as a property: whatever JSON-able arguments an edit gives a job, its
run receives exactly them (through the database, on each one)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db

# No NUL (PostgreSQL's jsonb refuses it), no lone surrogate.
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=10,
)
call_args = st.lists(json_values, max_size=4)
call_kwargs = st.dictionaries(text, json_values, max_size=4)


def _same(got, want) -> bool:
    """Equal and of the same JSON type at every level (True is not 1, 1.0 is not 1)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, list):
        return len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    return got == want


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(args=call_args, kwargs=call_kwargs, scheduled=st.booleans())
def test_the_run_of_an_edited_job_receives_exactly_the_edited_arguments(args, kwargs, scheduled):
    tasks.CALLS.clear()
    enqueued = tasks.echo.using(run_after=None).enqueue("before", key="before")
    job = Job.objects.get(pk=enqueued.id)
    if scheduled:  # a scheduled job too: run_ready_jobs makes it ready first
        job.edit(run_after=job.created_at.replace(year=job.created_at.year + 1))
    job.edit(args=args, kwargs=kwargs)
    run_ready_jobs(include_scheduled=True)
    assert len(tasks.CALLS) == 1
    got_args, got_kwargs = tasks.CALLS[0]
    assert _same(list(got_args), args)
    assert _same(got_kwargs, kwargs)
