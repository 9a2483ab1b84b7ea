"""STEADY_QUEUE: defaults, the system checks that catch mistakes, and the command's options."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from steady_queue.configuration import Configuration, check_configuration, load, seconds
from steady_queue.processes.dispatcher import Dispatcher
from steady_queue.processes.supervisor import Supervisor
from steady_queue.processes.worker import Worker

W, D, Opts = Configuration.Worker, Configuration.Dispatcher, Configuration.Options

BROKEN = Opts(workers=[W(threads=0, queues=["*_foo"])])


def ids(options) -> list[str]:
    return [message.id for message in checks_of(options)]


def checks_of(options):
    from django.test import override_settings

    with override_settings(STEADY_QUEUE=options):
        return check_configuration()


def kinds(supervisor: Supervisor) -> list[str]:
    return [factory().kind for factory in supervisor.factories]


def test_without_configuration_one_worker_and_one_dispatcher_run_with_the_defaults(settings):
    del settings.STEADY_QUEUE
    options = load()

    [worker] = options.configured_workers
    [dispatcher] = options.configured_dispatchers
    assert (worker.queues, worker.threads, worker.processes) == (("*",), 3, 1)
    assert seconds(worker.polling_interval) == pytest.approx(0.1)
    assert seconds(dispatcher.polling_interval) == 1 and dispatcher.batch_size == 500
    assert dispatcher.concurrency_maintenance
    assert seconds(dispatcher.concurrency_maintenance_interval) == 600


def test_configured_processes_become_worker_and_dispatcher_instances():
    options = Opts(
        workers=[W(queues=["real_time"], threads=5, processes=2, polling_interval=0.5)],
        dispatchers=[D(polling_interval=timedelta(seconds=2), batch_size=100)],
    )
    processes = [factory() for factory in Supervisor.from_configuration(options).factories]

    workers = [p for p in processes if isinstance(p, Worker)]
    [dispatcher] = [p for p in processes if isinstance(p, Dispatcher)]
    assert len(workers) == 2 and workers[0].name != workers[1].name
    assert workers[0].metadata() == {
        "queues": ["real_time"],
        "threads": 5,
        "polling_interval": 0.5,
    }
    assert (dispatcher.polling_interval, dispatcher.batch_size) == (2.0, 100)


def test_a_worker_with_async_concurrency_has_slots_and_shows_them():
    options = Opts(workers=[W(threads=2, async_concurrency=500)], dispatchers=[])
    processes = [factory() for factory in Supervisor.from_configuration(options).factories]
    [worker] = [p for p in processes if isinstance(p, Worker)]

    assert worker.async_slots.size == 500 and worker.async_slots.free_slots == 500
    assert worker.metadata()["async_concurrency"] == 500
    assert Worker(threads=2).async_slots is None
    assert "async_concurrency" not in Worker(threads=2).metadata()


def test_command_options_select_the_processes():
    options = Opts(workers=[W(processes=2)], dispatchers=[D()])
    scheduler = ["Scheduler"]

    assert kinds(Supervisor.from_configuration(options)) == [
        "Worker",
        "Worker",
        "Dispatcher",
        *scheduler,
    ]
    assert kinds(Supervisor.from_configuration(options, only_workers=True)) == ["Worker"] * 2
    assert kinds(Supervisor.from_configuration(options, only_dispatchers=True)) == [
        "Dispatcher",
        *scheduler,
    ]
    assert kinds(Supervisor.from_configuration(options, skip_recurring=True)) == [
        "Worker",
        "Worker",
        "Dispatcher",
    ]


def test_an_empty_list_runs_none_of_that_kind():
    assert kinds(Supervisor.from_configuration(Opts(dispatchers=[]), skip_recurring=True)) == [
        "Worker"
    ]


def test_a_valid_configuration_has_no_problems():
    worker = W(queues=["real_time", "beta*"], threads=5, recycle_after_jobs=1, async_concurrency=9)
    assert ids(Opts(workers=[worker, W(recycle_above_memory=512)], dispatchers=[D()])) == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"workers": []}, "steady_queue.E101"),
        (Opts(workers=[D()]), "steady_queue.E102"),
        (Opts(workers=W()), "steady_queue.E102"),
        (Opts(workers=[W(threads="3")]), "steady_queue.E103"),
        (Opts(workers=[W(queues="default")]), "steady_queue.E103"),
        (Opts(workers=[W(queues=[])]), "steady_queue.E103"),
        (Opts(dispatchers=[D(concurrency_maintenance="yes")]), "steady_queue.E103"),
        (Opts(dispatchers=[D(polling_interval="1s")]), "steady_queue.E103"),
        (Opts(workers=[W(threads=0)]), "steady_queue.E104"),
        (Opts(workers=[W(processes=-1)]), "steady_queue.E104"),
        (Opts(dispatchers=[D(batch_size=0)]), "steady_queue.E104"),
        (Opts(workers=[W(recycle_after_jobs=0)]), "steady_queue.E104"),
        (Opts(workers=[W(recycle_above_memory=-5)]), "steady_queue.E104"),
        (Opts(workers=[W(recycle_after_jobs=2.5)]), "steady_queue.E103"),
        (Opts(workers=[W(async_concurrency=0)]), "steady_queue.E104"),
        (Opts(workers=[W(async_concurrency="100")]), "steady_queue.E103"),
        (Opts(workers=[W(polling_interval=timedelta(0))]), "steady_queue.E104"),
        (Opts(workers=[W(queues=["*_foo"])]), "steady_queue.E105"),
        (Opts(workers=[W(queues=["be*ta"])]), "steady_queue.E105"),
    ],
)
def test_invalid_configurations_are_reported_by_system_checks(options, expected):
    assert ids(options) == [expected]


def test_queues_no_backend_accepts_are_reported(settings):
    settings.TASKS = {"default": settings.TASKS["default"]}  # the other one accepts any queue

    [warning] = checks_of(Opts(workers=[W(queues=["real_time", "typo", "beta*"])]))

    assert warning.id == "steady_queue.W101"
    assert warning.msg.endswith("accepts: typo.")


def test_threads_above_the_connection_pool_minus_two_are_reported(monkeypatch):
    options = django_settings.DATABASES["default"].setdefault("OPTIONS", {})
    monkeypatch.setitem(options, "pool", {"max_size": 6})

    assert ids(Opts(workers=[W(threads=4)])) == []
    [error] = checks_of(Opts(workers=[W(threads=5)]))
    assert error.id == "steady_queue.E106"
    assert "pool holds at most 6 connections" in error.msg


def test_async_slots_count_their_helper_threads_against_the_connection_pool(monkeypatch):
    options = django_settings.DATABASES["default"].setdefault("OPTIONS", {})
    monkeypatch.setitem(options, "pool", {"max_size": 10})

    assert ids(Opts(workers=[W(threads=4, async_concurrency=100)])) == []
    [error] = checks_of(Opts(workers=[W(threads=5, async_concurrency=100)]))
    assert error.id == "steady_queue.E106"
    assert "minus 6 threads" in error.hint


@pytest.mark.django_db  # the command checks for unapplied migrations first
def test_the_command_refuses_an_invalid_configuration_listing_every_problem():
    with pytest.raises(CommandError) as error:
        call_command("steady_queue", "--config", f"{__name__}.BROKEN", skip_checks=True)

    assert "threads must be at least 1, not 0" in str(error.value)
    assert "misplaced wildcard: '*_foo'" in str(error.value)


@pytest.mark.django_db  # the command checks for unapplied migrations first
def test_the_command_refuses_a_configuration_it_cannot_import():
    with pytest.raises(CommandError, match=r"Cannot import the configuration 'nowhere\.OPTIONS'"):
        call_command("steady_queue", "--config", "nowhere.OPTIONS", skip_checks=True)


def test_only_workers_and_only_dispatchers_exclude_each_other():
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command("steady_queue", "--only-workers", "--only-dispatchers", skip_checks=True)
