"""``manage.py check`` names each misconfiguration of the features clearly."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

import steady_queue
from steady_queue.checks.recurring import check_recurring_tasks
from steady_queue.checks.setup import check_sqlite_concurrency
from steady_queue.routers import check_queue_database
from steady_queue.task_options.recurring_task import recurring
from tests import tasks as foundation_tasks
from tests.tasks import features as tasks


def messages(errors) -> list[str]:
    return [f"{error.id} {error.msg}" for error in errors]


def test_valid_declarations_pass(declared):
    recurring(schedule="*/5 * * * *", key="fine", args=(1,), queue_name="low")(tasks.tick)
    assert check_recurring_tasks() == []


def test_an_invalid_schedule_is_reported_with_the_key_and_the_reason(declared):
    recurring(schedule="61 * * * *", key="nightly report")(tasks.tick)
    assert messages(check_recurring_tasks()) == [
        "steady_queue.E202 Recurring task 'nightly report': "
        "schedule '61 * * * *' is invalid: [61 * * * *] is not acceptable, out of range."
    ]


def test_a_schedule_with_too_few_fields_is_reported(declared):
    recurring(schedule="every day", key="words")(tasks.tick)
    [error] = check_recurring_tasks()
    assert "'words': schedule 'every day' is invalid: Exactly 5, 6 or 7 columns" in error.msg


def test_duplicate_keys_are_reported(declared):
    recurring(schedule="@daily", key="twice")(tasks.tick)
    recurring(schedule="@hourly", key="twice")(foundation_tasks.noop)
    assert messages(check_recurring_tasks()) == [
        "steady_queue.E201 Recurring task key 'twice' is declared more than once."
    ]


def test_an_unknown_queue_is_reported(declared):
    recurring(schedule="@daily", key="lost", queue_name="nowhere")(tasks.tick)
    assert messages(check_recurring_tasks()) == [
        "steady_queue.E202 Recurring task 'lost': "
        "queue 'nowhere' is not in TASKS['default']['QUEUES']."
    ]


def test_arguments_that_cannot_be_stored_are_reported(declared):
    recurring(schedule="@daily", key="bad args", args=(object(),))(tasks.tick)
    [error] = check_recurring_tasks()
    assert error.msg.startswith("Recurring task 'bad args': its arguments cannot be stored:")


def test_bad_priority_and_catch_up_are_reported(declared):
    recurring(schedule="@daily", key="odd", priority=500, catch_up=timedelta(0))(tasks.tick)
    assert messages(check_recurring_tasks()) == [
        "steady_queue.E202 Recurring task 'odd': catch_up must be a positive timedelta.",
        "steady_queue.E202 Recurring task 'odd': priority 500 is outside -100..100.",
    ]


@pytest.mark.django_db(databases=["default", "billing"])
def test_manage_py_check_fails_on_them(declared):
    recurring(schedule="* * *", key="broken")(tasks.tick)
    with pytest.raises(SystemCheckError, match="Recurring task 'broken': schedule"):
        call_command("check", stdout=StringIO(), stderr=StringIO())


def test_an_unknown_queue_database_is_reported(monkeypatch):
    monkeypatch.setattr(steady_queue, "database", "queue")
    assert messages(check_queue_database()) == [
        "steady_queue.E211 steady_queue.database is 'queue', which is not in DATABASES."
    ]


def test_a_queue_database_without_the_router_is_reported(monkeypatch):
    from django.conf import settings

    monkeypatch.setitem(settings.DATABASES, "queue", settings.DATABASES["default"])
    monkeypatch.setattr(steady_queue, "database", "queue")
    [error] = check_queue_database()
    assert error.id == "steady_queue.E212"
    assert "SteadyQueueRouter is not in DATABASE_ROUTERS" in error.msg


def test_bad_decorator_arguments_fail_at_import_with_the_reason():
    from steady_queue.task_options.concurrency import limits_concurrency
    from steady_queue.task_options.retries import retry_policy

    with pytest.raises(ValueError, match="on_conflict"):
        limits_concurrency(key="k", on_conflict="queue")
    with pytest.raises(ValueError, match="attempts"):
        retry_policy(attempts=0)


SQLITE = "django.db.backends.sqlite3"
CONCURRENT = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL;",
}


@pytest.fixture
def sqlite_queue_databases(monkeypatch):
    """Both queue databases ("default", and "billing" of the billing backend) on SQLite."""
    from django.conf import settings

    def configure(**options_by_alias) -> None:
        for alias, options in options_by_alias.items():
            config = {**settings.DATABASES[alias], "ENGINE": SQLITE, "OPTIONS": options}
            monkeypatch.setitem(settings.DATABASES, alias, config)

    return configure


def test_sqlite_set_up_for_concurrent_workers_passes(sqlite_queue_databases):
    sqlite_queue_databases(default=CONCURRENT, billing={**CONCURRENT, "timeout": 10})
    assert check_sqlite_concurrency() == []


def test_sqlite_without_wal_is_reported_with_the_settings_to_use(sqlite_queue_databases):
    sqlite_queue_databases(default={**CONCURRENT, "init_command": ""}, billing=CONCURRENT)

    [warning] = check_sqlite_concurrency()

    assert messages([warning]) == [
        "steady_queue.W001 SQLite database 'default' is not configured for concurrent "
        "workers: no WAL journal (readers and the writer wait for each other)."
    ]
    assert warning.hint.startswith(
        'Set DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", '
        '"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"}'
    )


@pytest.mark.parametrize(("timeout", "said"), [(None, "5 s, unset"), (2, "2 s"), (9.5, "9.5 s")])
def test_sqlite_with_no_or_a_short_busy_timeout_is_reported(sqlite_queue_databases, timeout, said):
    options = {key: value for key, value in CONCURRENT.items() if key != "timeout"}
    if timeout is not None:
        options["timeout"] = timeout
    sqlite_queue_databases(default=CONCURRENT, billing=options)

    assert messages(check_sqlite_concurrency()) == [
        "steady_queue.W001 SQLite database 'billing' is not configured for concurrent "
        f"workers: a busy timeout under 10 s ({said})."
    ]


def test_sqlite_with_django_defaults_is_reported_for_everything_it_lacks(sqlite_queue_databases):
    sqlite_queue_databases(default={}, billing=CONCURRENT)

    [warning] = check_sqlite_concurrency()

    assert warning.msg.split(": ", 1)[1].split("; ") == [
        "no WAL journal (readers and the writer wait for each other)",
        "a busy timeout under 10 s (5 s, unset)",
        "deferred transactions (a write after a read fails when another wrote).",
    ]
