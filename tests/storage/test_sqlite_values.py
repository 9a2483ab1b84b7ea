"""SQLite's rows of jobs (storage/sqlite/values.py) are what the ORM's fields would store."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection
from django.utils.functional import lazystr

from steady_queue.models import Job
from steady_queue.storage.sqlite import enqueue as sqlite_enqueue
from steady_queue.storage.sqlite import values as sqlite_values
from tests import tasks

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's storage"),
]


def as_the_orm_stores(job: Job, fields) -> list:
    return [field.get_db_prep_save(field.pre_save(job, True), connection) for field in fields]


def jobs() -> list[Job]:
    plain = Job.for_task_call(tasks.add, (1, 2), {}, backend="default")
    scheduled = Job.for_task_call(
        tasks.greet.using(run_after=timedelta(hours=1), priority=-3, queue_name="low"),
        ("ada",),
        {"times": 2},
        backend="default",
    )
    odd = Job.for_task_call(tasks.echo, (), {}, backend="default")
    odd.scheduled_at = datetime(2030, 1, 2, 3, 4, 5, 678, tzinfo=timezone(timedelta(hours=5)))
    odd.trace_context = {"traceparent": "00-abc-def-01"}
    odd.return_value = "a text, as JSON"  # not a dict or list: the field converts it
    odd.progress = 7
    odd.queue_name = lazystr("default")  # not a str: the field converts it
    odd.priority = True  # a bool, not an int
    odd.batch_id = None
    return [plain, scheduled, odd]


def test_the_rows_are_the_fields_own_values():
    fields = sqlite_enqueue._job_fields()
    made = jobs()

    rows = sqlite_values.job_rows(made, sqlite_values.plan_for(fields), connection)

    for job, row in zip(made, rows, strict=True):
        expected = as_the_orm_stores(job, fields)
        updated_at = [field.attname for field in fields].index("updated_at")
        row[updated_at] = expected[updated_at] = None  # set on save: a moment apart
        assert row == expected


def test_a_naive_datetime_warns_as_the_orm_does():
    job = Job.for_task_call(tasks.add, (1, 2), {}, backend="default")
    job.scheduled_at = datetime(2030, 1, 2, 3, 4, 5)
    fields = sqlite_enqueue._job_fields()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (row,) = sqlite_values.job_rows([job], sqlite_values.plan_for(fields), connection)
        assert any("naive datetime" in str(warning.message) for warning in caught)
        expected = as_the_orm_stores(job, fields)

    at = [field.attname for field in fields].index("scheduled_at")
    assert row[at] == expected[at]
    assert datetime.fromisoformat(row[at]).replace(tzinfo=UTC) > datetime(2030, 1, 1, tzinfo=UTC)


def test_the_moment_a_job_is_updated_is_set_on_it():
    job = Job.for_task_call(tasks.add, (1, 2), {}, backend="default")
    job.updated_at = None
    fields = sqlite_enqueue._job_fields()

    sqlite_values.job_rows([job], sqlite_values.plan_for(fields), connection)

    assert job.updated_at is not None  # auto_now: the field's pre_save set it


def test_a_moment_is_stored_as_a_datetime_field_stores_it():
    field = Job._meta.get_field("finished_at")
    for value in (
        datetime(2030, 1, 2, 3, 4, 5, 678, tzinfo=UTC),
        datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=-7))),
    ):
        assert sqlite_values.moment(value, connection) == field.get_db_prep_save(value, connection)
