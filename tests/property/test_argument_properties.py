"""docs/reference/tasks.md, "Arguments", as properties: every supported value comes back
equal (through the database, too), and anything else is refused with SerializationError
before a row is written."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from steady_queue import arguments
from steady_queue.arguments import TAG, SerializationError
from steady_queue.backend import enqueue_all
from steady_queue.compat import TaskResult, normalize_json
from steady_queue.models import Job
from steady_queue.results import enqueued_result
from tests import tasks
from tests.models import Account

pytestmark = pytest.mark.django_db(transaction=True)

# Every database stores these: no NUL (PostgreSQL's jsonb refuses it), no lone surrogate.
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=20)
# Fixed offsets and IANA zones; no imaginary wall times (skipped by a DST change). No
# naive datetimes: with USE_TZ they are read in the default zone, with a warning
# (tests/test_naive_datetime_arguments.py).
zones = st.timezones() | st.builds(
    dt.timezone,
    st.timedeltas(dt.timedelta(hours=-23), dt.timedelta(hours=23)).map(
        lambda delta: dt.timedelta(minutes=delta // dt.timedelta(minutes=1))
    ),
)
datetimes = st.datetimes(timezones=zones, allow_imaginary=False)
# A time of day has no date, so a zone with daylight saving gives it no offset: fixed ones.
times = st.times(timezones=st.none() | st.just(dt.UTC))
leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
    | datetimes
    | st.dates()
    | times
    | st.timedeltas()
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.uuids()
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(text | st.just(TAG), inner, max_size=4)
    ),
    max_leaves=12,
)


def expected(value):
    """What the task receives: tuples come back as lists."""
    if isinstance(value, (list, tuple)):
        return [expected(item) for item in value]
    if isinstance(value, dict):
        return {key: expected(item) for key, item in value.items()}
    return value


def assert_same(loaded, original) -> None:
    """Equal, of the same type, and for dates and times in the same zone (offset)."""
    original = expected(original)
    assert type(loaded) is type(original)
    if isinstance(original, list):
        assert len(loaded) == len(original)
        for got, want in zip(loaded, original, strict=True):
            assert_same(got, want)
    elif isinstance(original, dict):
        assert loaded.keys() == original.keys()
        for key in original:
            assert_same(loaded[key], original[key])
    elif isinstance(original, float):
        assert loaded == original and math.copysign(1, loaded) == math.copysign(1, original)
    else:
        assert loaded == original
        if isinstance(original, (dt.datetime, dt.time)):
            assert loaded.utcoffset() == original.utcoffset()
        if isinstance(original, dt.datetime) and isinstance(original.tzinfo, ZoneInfo):
            assert loaded.tzinfo == original.tzinfo


@settings(max_examples=300, deadline=None)
@given(st.lists(values, max_size=3), st.dictionaries(text, values, max_size=3))
def test_every_supported_value_round_trips(args, kwargs):
    loaded_args, loaded_kwargs = arguments.deserialize(arguments.serialize(args, kwargs))
    assert_same(loaded_args, args)
    assert_same(loaded_kwargs, kwargs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(values, max_size=3), st.dictionaries(text, values, max_size=3))
@example([-0.0, 1e16], {"zero": -0.0})  # PostgreSQL's jsonb drops the sign of -0.0
def test_every_supported_value_round_trips_through_the_database(args, kwargs):
    result = tasks.echo.enqueue(*args, **kwargs)
    stored = Job.objects.get(pk=result.id).arguments
    loaded_args, loaded_kwargs = arguments.deserialize(stored)
    assert_same(loaded_args, args)
    assert_same(loaded_kwargs, kwargs)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.lists(values, max_size=3), st.dictionaries(text, values, max_size=3)),
        min_size=2,
        max_size=4,
    )
)
@example([([-0.0, "\u00e9\U0001f600"], {"zero": -0.0}), ([{"deep": [1.5, None]}], {})])
def test_every_supported_value_round_trips_through_a_bulk_enqueue(calls):
    """enqueue_all writes many jobs its own way per database (PostgreSQL: binary COPY)."""
    results = enqueue_all([(tasks.echo, args, kwargs) for args, kwargs in calls])
    stored = Job.objects.in_bulk([int(result.id) for result in results])
    for result, (args, kwargs) in zip(results, calls, strict=True):
        loaded_args, loaded_kwargs = arguments.deserialize(stored[int(result.id)].arguments)
        assert_same(loaded_args, args)
        assert_same(loaded_kwargs, kwargs)


def test_a_saved_model_instance_comes_back_as_its_row():
    account = Account.objects.create(name="before")
    result = tasks.echo.enqueue([account], key=account)
    Account.objects.filter(pk=account.pk).update(name="after")
    (args, kwargs) = arguments.deserialize(Job.objects.get(pk=result.id).arguments)
    assert args[0][0] == account and args[0][0].name == "after"
    assert kwargs["key"] == account


class Unsupported:
    pass


unsupported = (
    st.sets(st.integers(), max_size=2)
    | st.frozensets(st.integers(), max_size=2)
    | st.binary(max_size=4)
    | st.complex_numbers(allow_nan=False)
    | st.sampled_from([math.nan, math.inf, -math.inf])
    | st.builds(Unsupported)
    | st.builds(Account, name=text)  # unsaved
    | st.dictionaries(st.integers() | st.none(), leaves, min_size=1, max_size=2)  # non-str keys
)
# One unsupported value somewhere inside supported containers.
hidden = st.recursive(
    unsupported,
    lambda inner: (
        st.tuples(st.lists(leaves, max_size=2), inner).map(lambda t: [*t[0], t[1]])
        | st.tuples(st.dictionaries(text, leaves, max_size=2), text, inner).map(
            lambda t: {**t[0], t[1]: t[2]}
        )
    ),
    max_leaves=4,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(leaves, max_size=2), hidden, st.booleans())
def test_anything_else_is_refused_with_its_path_and_nothing_is_written(good, bad, as_kwarg):
    before = Job.objects.count()
    args, kwargs = ([*good], {"value": bad}) if as_kwarg else ([*good, bad], {})
    with pytest.raises(SerializationError) as refused:
        tasks.echo.enqueue(*args, **kwargs)
    assert isinstance(refused.value, TypeError)
    path = "kwargs['value']" if as_kwarg else f"args[{len(good)}]"
    assert path in str(refused.value)
    assert Job.objects.count() == before


@settings(max_examples=200, deadline=None)
@given(st.lists(values, max_size=3), st.dictionaries(text, values, max_size=3))
def test_an_enqueued_result_is_the_one_task_result_would_make(args, kwargs):
    """The enqueued result skips TaskResult's normalizing: the shown arguments are JSON."""
    job = Job.for_task_call(tasks.echo, args, kwargs, backend="default")
    job.pk = 7
    made = enqueued_result(job, tasks.echo)
    fields = {field.name: getattr(made, field.name) for field in dataclasses.fields(TaskResult)}
    assert made == TaskResult(**{name: v for name, v in fields.items() if name != "_return_value"})
    assert made.args == normalize_json(made.args) and made.kwargs == normalize_json(made.kwargs)
    assert made._return_value is None
