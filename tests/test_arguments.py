"""Rich arguments round-trip exactly to the task function; anything else is refused up front."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from steady_queue import arguments
from steady_queue.arguments import DeserializationError, SerializationError
from steady_queue.compat import TaskResultStatus, default_task_backend
from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.models import Account, Document

pytestmark = pytest.mark.django_db(transaction=True)

RICH_VALUES = [
    datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC),
    datetime(2024, 2, 29, 23, 59, 58, 654321, tzinfo=timezone(timedelta(hours=-3, minutes=-30))),
    datetime(2024, 1, 1, 12, 0, tzinfo=ZoneInfo("Europe/Paris")),  # naive: see test_naive_*
    date(1999, 12, 31),
    time(7, 8, 9, 10),
    time(7, 8, tzinfo=UTC),
    timedelta(days=-2, seconds=5, microseconds=7),
    Decimal("12345678901234567890.000000001"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
]


def _run_echo(*args, **kwargs):
    result = tasks.echo.enqueue(*args, **kwargs)
    run_ready_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    return tasks.CALLS[-1]


@pytest.mark.parametrize("value", RICH_VALUES, ids=lambda v: type(v).__name__)
def test_rich_values_round_trip_exactly(value):
    args, kwargs = _run_echo(value, named=value)

    assert args == (value,) and type(args[0]) is type(value)
    assert kwargs["named"] == value and type(kwargs["named"]) is type(value)
    if isinstance(value, datetime | time):
        assert args[0].utcoffset() == value.utcoffset()


def test_nested_structures_round_trip():
    payload = {
        "when": [date(2020, 1, 1), {"deep": Decimal("1.5")}],
        "plain": [1, 2.5, "three", None, True],
        "__sq__": "user data that looks like our tag",
    }

    args, _ = _run_echo(payload)

    assert args[0] == payload


def test_model_instances_are_fetched_again_at_run_time():
    account = Account.objects.create(name="before")
    document = Document.objects.create(title="doc")
    result = tasks.echo.enqueue(account, doc=document)
    Account.objects.filter(pk=account.pk).update(name="after")

    run_ready_jobs()

    (received,), kwargs = tasks.CALLS[-1]
    assert isinstance(received, Account) and received.pk == account.pk
    assert received.name == "after"
    assert kwargs["doc"] == document and isinstance(kwargs["doc"].pk, uuid.UUID)
    assert default_task_backend.get_result(result.id).args == [account.pk]


def test_deleted_model_row_fails_the_job_with_deserialization_error():
    account = Account.objects.create(name="gone")
    result = tasks.echo.enqueue(account)
    account.delete()

    run_ready_jobs()

    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert tasks.CALLS == []
    error = result.errors[0]
    assert error.exception_class_path == "steady_queue.arguments.DeserializationError"
    assert error.exception_class is DeserializationError
    assert "no longer exists" in error.traceback


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        ({1, 2}, "builtins.set"),
        (b"bytes", "builtins.bytes"),
        (object(), "builtins.object"),
        (frozenset(), "builtins.frozenset"),
    ],
)
def test_unsupported_types_are_refused_naming_argument_and_type(value, type_name):
    with pytest.raises(SerializationError) as raised:
        tasks.echo.enqueue(1, [0, value])

    assert "args[1][1]" in str(raised.value)
    assert type_name in str(raised.value)
    assert not Job.objects.exists()


def test_unsaved_model_is_refused():
    with pytest.raises(SerializationError, match="unsaved Account"):
        tasks.echo.enqueue(Account(name="new"))
    assert not Job.objects.exists()


def test_non_finite_float_is_refused():
    with pytest.raises(SerializationError, match="nan"):
        tasks.echo.enqueue(x=float("nan"))


def test_non_string_dict_keys_are_refused():
    with pytest.raises(SerializationError, match="keys must be str"):
        tasks.echo.enqueue({1: "one"})


@pytest.mark.parametrize(
    ("call", "where", "what"),
    [
        (lambda: tasks.echo.enqueue("a\x00b"), "args[0]", "NUL"),
        (
            lambda: tasks.echo.enqueue(name=os.fsdecode(b"report-\xff.csv")),
            "kwargs['name']",
            "surrogate",
        ),
        (lambda: tasks.echo.enqueue({"k\x00": 1}), "args[0] key", "NUL"),
        (lambda: tasks.echo.enqueue([{"path": "\udcff"}]), "args[0][0]['path']", "surrogate"),
    ],
    ids=["nul", "fsdecoded-name", "nul-key", "nested-surrogate"],
)
def test_text_no_database_can_store_is_refused_on_every_database(call, where, what):
    # Before, PostgreSQL failed inside the INSERT with a driver error and the other
    # databases stored what PostgreSQL refuses; now every database refuses it up front.
    with pytest.raises(SerializationError, match=what) as raised:
        call()
    assert where in str(raised.value)
    assert not Job.objects.exists()


def test_result_arguments_are_a_json_safe_view():
    account = Account.objects.create(name="a")
    moment = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)

    result = tasks.echo.enqueue(moment, Decimal("1.10"), account, delay=timedelta(seconds=90))

    json.dumps([result.args, result.kwargs])
    assert result.args == ["2024-05-06T07:08:09+00:00", "1.10", account.pk]
    assert result.kwargs == {"delay": "0:01:30"}
    fetched = default_task_backend.get_result(result.id)
    assert (fetched.args, fetched.kwargs) == (result.args, result.kwargs)


def test_serialize_and_deserialize_are_inverse_without_the_database():
    stored = arguments.serialize([RICH_VALUES[0], [RICH_VALUES[6]]], {"k": RICH_VALUES[7]})

    assert json.loads(json.dumps(stored)) == stored
    assert arguments.deserialize(stored) == (
        [RICH_VALUES[0], [RICH_VALUES[6]]],
        {"k": RICH_VALUES[7]},
    )
