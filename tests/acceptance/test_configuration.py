"""docs/reference/settings.md: "Configuration", module-level settings and the system checks
of "manage.py check"."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, SystemCheckError
from django.test import override_settings

import steady_queue
from steady_queue.configuration import Configuration

pytestmark = pytest.mark.django_db


def check_output(*args: str) -> str:
    """Run ``manage.py check`` and return everything it reported, errors included."""
    out, err = StringIO(), StringIO()
    try:
        call_command("check", *args, stdout=out, stderr=err)
    except SystemCheckError as exc:
        return out.getvalue() + err.getvalue() + str(exc)
    return out.getvalue() + err.getvalue()


def test_readme_configuration_example_is_valid():
    options = Configuration.Options(
        workers=[
            Configuration.Worker(queues=["real_time"], threads=5, polling_interval=0.1),
            Configuration.Worker(queues=["default", "low"], threads=3, processes=2),
        ],
        dispatchers=[
            Configuration.Dispatcher(polling_interval=timedelta(seconds=1), batch_size=500),
        ],
    )
    # The queues its workers poll (steady_queue.W201 names task queues no worker polls).
    tasks = {
        "default": {
            "BACKEND": "steady_queue.backend.SteadyQueueBackend",
            "QUEUES": ["real_time", "default", "low"],
        }
    }
    with override_settings(STEADY_QUEUE=options, TASKS=tasks):
        output = check_output()
    assert "steady_queue" not in output


def test_documented_defaults():
    worker = Configuration.Worker()
    assert list(worker.queues) == ["*"]
    assert worker.threads == 3
    assert worker.processes == 1
    assert _seconds(worker.polling_interval) == pytest.approx(0.1)
    dispatcher = Configuration.Dispatcher()
    assert _seconds(dispatcher.polling_interval) == pytest.approx(1)
    assert dispatcher.batch_size == 500
    assert dispatcher.concurrency_maintenance is True
    assert _seconds(dispatcher.concurrency_maintenance_interval) == pytest.approx(600)
    options = Configuration.Options()
    assert options.workers is None and options.dispatchers is None


def _seconds(value) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def test_module_level_settings_defaults():
    assert steady_queue.process_heartbeat_interval == timedelta(seconds=60)
    assert steady_queue.process_alive_threshold == timedelta(minutes=5)
    assert steady_queue.shutdown_timeout == timedelta(seconds=5)
    assert steady_queue.supervisor_pidfile is None
    assert steady_queue.preserve_finished_jobs is True
    assert steady_queue.clear_finished_jobs_after == timedelta(days=1)
    assert steady_queue.default_concurrency_control_period == timedelta(minutes=3)
    assert steady_queue.database == "default"


@pytest.mark.parametrize(
    ("setting", "code"),
    [
        ({"workers": []}, "steady_queue.E101"),
        (Configuration.Worker(), "steady_queue.E101"),
        (Configuration.Options(workers=[Configuration.Dispatcher()]), "steady_queue.E102"),
        (Configuration.Options(dispatchers=[Configuration.Worker()]), "steady_queue.E102"),
        (Configuration.Options(workers=[Configuration.Worker(queues="default")]), "E103"),
        (Configuration.Options(workers=[Configuration.Worker(threads="3")]), "E103"),
        (
            Configuration.Options(dispatchers=[Configuration.Dispatcher(batch_size=1.5)]),
            "E103",
        ),
        (Configuration.Options(workers=[Configuration.Worker(threads=0)]), "E104"),
        (Configuration.Options(workers=[Configuration.Worker(processes=-1)]), "E104"),
        (Configuration.Options(workers=[Configuration.Worker(polling_interval=0)]), "E104"),
        (
            Configuration.Options(dispatchers=[Configuration.Dispatcher(polling_interval=-1)]),
            "E104",
        ),
        (Configuration.Options(workers=[Configuration.Worker(queues=["*_low"])]), "E105"),
        (Configuration.Options(workers=[Configuration.Worker(queues=["be*ta"])]), "E105"),
        (Configuration.Options(workers=[Configuration.Worker(queues=["**"])]), "E105"),
    ],
    ids=repr,
)
def test_configuration_mistakes_are_reported_by_check(setting, code):
    with override_settings(STEADY_QUEUE=setting):
        output = check_output()
    assert code in output


def test_prefix_and_star_wildcards_are_fine():
    setting = Configuration.Options(
        workers=[Configuration.Worker(queues=["real_time", "beta*"]), Configuration.Worker()]
    )
    with override_settings(STEADY_QUEUE=setting):
        assert "steady_queue" not in check_output()


def test_unknown_queue_is_a_warning():
    setting = Configuration.Options(workers=[Configuration.Worker(queues=["emails"])])
    # The "secondary" backend of the test settings accepts any queue: drop it.
    tasks_setting = {
        "default": {
            "BACKEND": "steady_queue.backend.SteadyQueueBackend",
            "QUEUES": ["default", "real_time"],
        }
    }
    with override_settings(STEADY_QUEUE=setting, TASKS=tasks_setting):
        output = check_output()
    assert "steady_queue.W101" in output
    assert "emails" in output


def test_threads_above_the_connection_pool(monkeypatch, settings):
    from django.conf import settings as django_settings

    options = dict(django_settings.DATABASES["default"].get("OPTIONS", {}))
    options["pool"] = {"min_size": 2, "max_size": 6}
    monkeypatch.setitem(django_settings.DATABASES["default"], "OPTIONS", options)
    too_many = Configuration.Options(workers=[Configuration.Worker(threads=5)])
    just_right = Configuration.Options(workers=[Configuration.Worker(threads=4)])
    with override_settings(STEADY_QUEUE=too_many):
        assert "steady_queue.E106" in check_output()
    with override_settings(STEADY_QUEUE=just_right):
        assert "steady_queue.E106" not in check_output()


README_SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL;",
}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"},
        {"transaction_mode": "IMMEDIATE", "timeout": 20},
        {**README_SQLITE_OPTIONS, "timeout": 1},
    ],
    ids=["nothing", "no IMMEDIATE", "no WAL", "short timeout"],
)
def test_sqlite_not_set_up_like_the_readme_warns(monkeypatch, options):
    from django.conf import settings as django_settings

    default = django_settings.DATABASES["default"]
    # The check reads settings only: it runs against any test database.
    monkeypatch.setitem(default, "ENGINE", "django.db.backends.sqlite3")
    monkeypatch.setitem(default, "OPTIONS", README_SQLITE_OPTIONS)
    assert "steady_queue.W001" not in check_output()
    monkeypatch.setitem(default, "OPTIONS", options)
    # docs/reference/settings.md: "`manage.py check` reports the warning steady_queue.W001".
    assert "steady_queue.W001" in check_output()


def test_queue_database_alias_missing_from_databases(monkeypatch):
    monkeypatch.setattr(steady_queue, "database", "queue")
    output = check_output()
    assert "steady_queue.E211" in output and "'queue'" in output


def test_command_refuses_to_start_with_an_invalid_configuration():
    with (
        override_settings(
            STEADY_QUEUE=Configuration.Options(workers=[Configuration.Worker(threads=0)])
        ),
        pytest.raises(CommandError),
    ):
        call_command("steady_queue", "--skip-checks")


def test_command_refuses_an_unimportable_config_path():
    with pytest.raises(CommandError):
        call_command("steady_queue", "--config", "tests.acceptance.nowhere.CONFIG")


def test_intervals_take_numbers_or_timedeltas():
    setting = Configuration.Options(
        workers=[Configuration.Worker(polling_interval=timedelta(milliseconds=200))],
        dispatchers=[
            Configuration.Dispatcher(
                polling_interval=2, concurrency_maintenance_interval=timedelta(minutes=1)
            )
        ],
    )
    with override_settings(STEADY_QUEUE=setting):
        assert "steady_queue" not in check_output()


def test_logger_namespace():
    import logging

    import steady_queue.observability.log  # noqa: F401 -- loaded with the app

    assert logging.getLogger("steady_queue.jobs").parent.name in ("steady_queue", "root")


def test_no_steady_queue_backend_in_tasks_is_reported():
    # DESIGN: "a backend not in TASKS" is caught by the system checks.
    from tests.acceptance.api import BACKPORT

    dummy = "django_tasks" if BACKPORT else "django.tasks"
    other = {"default": {"BACKEND": f"{dummy}.backends.dummy.DummyBackend"}}
    with override_settings(TASKS=other):
        output = check_output()
    assert "steady_queue.W002" in output
    assert "TASKS" in output


def test_router_sends_steady_queue_models_to_the_queue_database(monkeypatch):
    from django.contrib.auth.models import User

    from steady_queue.models import Job
    from steady_queue.routers import SteadyQueueRouter

    monkeypatch.setattr(steady_queue, "database", "queue")
    router = SteadyQueueRouter()
    assert router.db_for_read(Job) == "queue" and router.db_for_write(Job) == "queue"
    assert router.db_for_read(User) is None
    assert router.allow_migrate("queue", "steady_queue") is True
    assert router.allow_migrate("default", "steady_queue") is False
    assert router.allow_migrate("queue", "auth") is False


def test_default_worker_is_checked_against_the_pool_too(monkeypatch):
    from django.conf import settings as django_settings

    # psycopg's pool holds 4 connections by default; the default worker needs 3 + 2.
    options = dict(django_settings.DATABASES["default"].get("OPTIONS", {}))
    options["pool"] = True
    monkeypatch.setitem(django_settings.DATABASES["default"], "OPTIONS", options)
    assert not hasattr(django_settings, "STEADY_QUEUE")
    assert "steady_queue.E106" in check_output()
