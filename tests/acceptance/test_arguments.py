"""docs/reference/tasks.md, "Arguments": every supported type round-trips; everything else
is refused."""

from __future__ import annotations

import datetime as dt
import io
import uuid
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from steady_queue.arguments import DeserializationError, SerializationError
from steady_queue.backend import enqueue_all
from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import TaskResultStatus, default_task_backend
from tests.models import Account, Document
from tests.tasks.acceptance import receive, seen

pytestmark = pytest.mark.django_db

PARIS = ZoneInfo("Europe/Paris")

ROUND_TRIPS = [
    None,
    True,
    False,
    0,
    -7,
    2**53,
    1.5,
    "text with ünïcode",
    "",
    [1, [2, "three"]],
    {"a": 1, "nested": {"b": [None, True]}},
    dt.datetime(2024, 3, 31, 1, 30, 15, 123456, tzinfo=PARIS),
    dt.datetime(2024, 7, 14, 12, 0, tzinfo=PARIS),
    dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=PARIS),  # naive: see below
    dt.date(2024, 2, 29),
    dt.time(23, 59, 59, 999999),
    dt.time(8, 30, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
    dt.timedelta(days=-3, seconds=5, microseconds=7),
    dt.timedelta(0),
    Decimal("12345678901234567890.000000001"),
    Decimal("-0.10"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    # A dict that looks like a stored rich value must come back as the same dict.
    {"__sq__": "datetime", "value": "2024-01-01"},
    {"__type__": "date", "value": "x"},
]


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=repr)
def test_value_round_trips_exactly(value):
    receive.enqueue(value, key=value)
    run_ready_jobs()
    [(args, kwargs)] = seen("receive")
    assert args == (value,) and kwargs == {"key": value}
    for received in (args[0], kwargs["key"]):
        assert type(received) is type(value)
        if isinstance(value, (dt.datetime, dt.time)):
            assert received.utcoffset() == value.utcoffset()
            assert received.tzinfo == value.tzinfo or received.tzname() == value.tzname()


def test_zone_aware_datetime_keeps_its_zone():
    # "time zone included": arithmetic in the task follows the zone's DST rules.
    before_dst = dt.datetime(2024, 3, 30, 12, 0, tzinfo=PARIS)
    receive.enqueue(before_dst)
    run_ready_jobs()
    [((received,), _)] = seen("receive")
    assert received == before_dst
    assert received.tzinfo == PARIS
    assert (received + dt.timedelta(days=1)).utcoffset() == dt.timedelta(hours=2)


def test_naive_datetime_warns_and_is_read_in_the_default_time_zone(settings):
    # As Django's DateTimeField treats one while USE_TZ is on.
    settings.TIME_ZONE = "Europe/Paris"
    naive = dt.datetime(2024, 1, 2, 3, 4, 5, 6)
    with pytest.warns(RuntimeWarning, match="naive datetime .* time zone support is active"):
        receive.enqueue(naive)
    run_ready_jobs()
    [((received,), _)] = seen("receive")
    assert received == naive.replace(tzinfo=PARIS)


def test_naive_datetime_round_trips_without_time_zone_support(settings):
    settings.USE_TZ = False
    naive = dt.datetime(2024, 1, 2, 3, 4, 5, 6)
    receive.enqueue(naive)
    run_ready_jobs()
    [((received,), _)] = seen("receive")
    assert received == naive and received.tzinfo is None


def test_tuples_come_back_as_lists():
    receive.enqueue((1, (2, 3)))
    run_ready_jobs()
    [(args, _)] = seen("receive")
    assert args == ([1, [2, 3]],)


def test_rich_values_nested_in_lists_and_dicts():
    value = {"when": [dt.date(2024, 1, 1), {"amount": Decimal("1.10")}]}
    receive.enqueue(value)
    run_ready_jobs()
    [(args, _)] = seen("receive")
    assert args == (value,)
    assert isinstance(args[0]["when"][1]["amount"], Decimal)


def test_model_instance_is_fetched_again_when_the_job_runs():
    account = Account.objects.create(name="before")
    document = Document.objects.create(title="uuid pk")
    receive.enqueue(account, doc=document)
    Account.objects.filter(pk=account.pk).update(name="after")

    run_ready_jobs()

    [(args, kwargs)] = seen("receive")
    assert isinstance(args[0], Account) and args[0].pk == account.pk
    assert args[0].name == "after"
    assert kwargs["doc"] == document and isinstance(kwargs["doc"].pk, uuid.UUID)


def test_deleted_model_row_fails_the_job_with_deserialization_error():
    account = Account.objects.create(name="gone")
    result = receive.enqueue(account)
    account.delete()

    run_ready_jobs()

    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[-1].exception_class_path == "steady_queue.arguments.DeserializationError"
    assert result.errors[-1].exception_class is DeserializationError
    assert seen("receive") == []


def test_result_args_and_kwargs_are_a_json_safe_view():
    account = Account.objects.create(name="acme")
    moment = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC)
    ident = uuid.uuid4()
    result = receive.enqueue(
        moment, dt.date(2024, 5, 6), dt.time(7, 8), Decimal("9.99"), ident, account, (1, 2)
    )
    expected_args = [
        moment.isoformat(),
        "2024-05-06",
        "07:08:00",
        "9.99",
        str(ident),
        account.pk,
        [1, 2],
    ]
    assert result.args == expected_args
    fetched = default_task_backend.get_result(result.id)
    assert fetched.args == expected_args
    with_kwargs = receive.enqueue(when=moment, amount=Decimal("1"))
    assert with_kwargs.kwargs == {"when": moment.isoformat(), "amount": "1"}


class Unknown:
    pass


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        ({1, 2}, "set"),
        (frozenset(), "frozenset"),
        (object(), "builtins.object"),
        (Unknown(), "Unknown"),
        (b"bytes", "bytes"),
        (1 + 2j, "complex"),
        (float("nan"), "float"),
        (float("inf"), "float"),
        (Account(name="unsaved"), "Account"),
        (io.StringIO("an open file"), "StringIO"),
    ],
    # Not repr: object reprs carry memory addresses, and pytest-xdist needs equal ids.
    ids=lambda value: value if isinstance(value, str) else type(value).__name__,
)
def test_unsupported_argument_is_refused_naming_argument_and_type(value, type_name):
    with pytest.raises(SerializationError) as caught:
        receive.enqueue("fine", value)
    assert isinstance(caught.value, TypeError)
    assert "args[1]" in str(caught.value)
    assert type_name in str(caught.value)
    assert not Job.objects.exists()


def test_unsupported_keyword_argument_names_the_keyword():
    with pytest.raises(SerializationError, match="kwargs") as caught:
        receive.enqueue(payload={1})
    assert "payload" in str(caught.value) and "set" in str(caught.value)
    assert not Job.objects.exists()


def test_readme_message_for_an_object():
    with pytest.raises(
        SerializationError,
        match=r"^Argument args\[0\] of type builtins\.object cannot be serialized\. Supported: ",
    ):
        receive.enqueue(object())


def test_non_string_dict_keys_are_refused():
    with pytest.raises(SerializationError):
        receive.enqueue({1: "one"})
    assert not Job.objects.exists()


def test_refused_argument_in_bulk_enqueue_writes_nothing():
    with pytest.raises(SerializationError):
        enqueue_all([(receive, [1], {}), (receive, [2], {}), (receive, [{3}], {})])
    assert not Job.objects.exists()


def test_refusal_happens_before_any_signal(signals):
    with pytest.raises(SerializationError):
        receive.enqueue(object())
    assert signals.of("enqueued") == []
