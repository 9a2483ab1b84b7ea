"""``@transactional``: what it accepts and what it refuses as it is declared."""

from __future__ import annotations

import sys
import threading
import time
from datetime import timedelta

import pytest

import steady_queue
from steady_queue import durable
from steady_queue.compat import task
from steady_queue.durable import wait_for_signal
from steady_queue.exceptions import TransactionalTaskError
from steady_queue.task_options import transactional as option
from steady_queue.task_options.transactional import transactional
from tests.tasks import transactional as tasks


@pytest.fixture(autouse=True)
def _registry_restored(monkeypatch):
    """Declarations made by a test are forgotten after it."""
    monkeypatch.setattr(option._registry, "_options", dict(option._registry._options))


def test_a_bare_declaration_writes_to_default_where_its_jobs_live():
    assert option.declared(tasks.write.module_path) == option.Transactional("default")
    assert option.declared("tests.tasks.add") is None


def test_using_names_the_database_of_a_backend_with_its_own():
    declared = option.declared(tasks.billing_noop.module_path)
    assert declared == option.Transactional("billing")


def elsewhere():
    """A plain function: each test makes the Task it needs of it (tasks are module-level)."""


async def on_a_loop():
    pass


def test_a_backend_whose_jobs_live_elsewhere_is_refused():
    with pytest.raises(TransactionalTaskError) as refused:
        transactional(task(backend="billing")(elsewhere))

    message = str(refused.value)
    assert "writes to database 'default' but its jobs live in 'billing'" in message
    assert "@transactional(using=...)" in message
    assert option.declared(f"{__name__}.elsewhere") is None  # nothing registered


def test_the_project_queue_database_counts_for_a_backend_without_its_own(monkeypatch):
    monkeypatch.setattr(steady_queue, "database", "billing")
    with pytest.raises(TransactionalTaskError, match="its jobs live in 'billing'"):
        transactional(task()(elsewhere))

    declared = transactional(using="billing")(task()(elsewhere))

    assert option.declared(declared.module_path).using == "billing"


def test_it_goes_above_task():
    with pytest.raises(TypeError, match="goes above @task"):
        transactional(elsewhere)


def test_an_async_task_is_refused():
    with pytest.raises(TransactionalTaskError, match="is an async def"):
        transactional(task()(on_a_loop))


@pytest.mark.parametrize("using", ["", 3, None])
def test_using_must_be_an_alias(using):
    with pytest.raises(TypeError, match="takes a database alias"):
        transactional(using=using)


def test_outside_a_transactional_body_nothing_is_deferred_or_refused():
    assert option.after_transaction(lambda: None) is False
    option.refuse_inside("sleep")  # no error


def test_inside_a_body_callbacks_wait_and_durable_calls_are_refused():
    ran = []
    with option.body() as after:
        assert option.after_transaction(lambda: ran.append(1)) is True
        with pytest.raises(TransactionalTaskError, match=r"durable\.sleep cannot run inside"):
            option.refuse_inside("sleep")
    assert after and ran == []  # the runner runs them once the transaction ended


def sleeps(context):
    durable.sleep(context, timedelta(seconds=1))


def waits(context):
    return wait_for_signal(context, "go")


def waits_in_a_lambda(context):
    return (lambda: durable.wait_for_signal(context, "go"))()


@pytest.mark.parametrize(
    ("body", "call"),
    [(sleeps, "sleep"), (waits, "wait_for_signal"), (waits_in_a_lambda, "wait_for_signal")],
)
def test_a_body_that_sleeps_or_waits_is_refused(body, call):
    with pytest.raises(TransactionalTaskError, match=rf"calls steady_queue\.durable\.{call}"):
        transactional(task(takes_context=True)(body))


def test_the_public_import_path():
    from steady_queue.durable import transactional as public

    assert public is transactional


def test_a_thread_asking_while_another_imports_the_task_waits_for_its_declaration():
    # Two threads of a new worker running the task's first jobs: the second must not take
    # the module it did not import yet for a task without the option.
    path = "tests.tasks.slow_import.declared_late"
    assert "tests.tasks.slow_import" not in sys.modules
    found = []
    first = threading.Thread(target=lambda: found.append(option.declared(path)))
    first.start()
    time.sleep(0.1)  # the first thread is importing the module now

    second = option.declared(path)

    first.join()
    assert second == option.Transactional("default") == found[0]


def test_the_durable_calls_are_found_where_they_live():
    # The look at a body's names knows them by module: a move must be followed there.
    for call in (durable.sleep, durable.wait_for_signal):
        assert call.__module__ in option.DURABLE_MODULES and option._is_resuming(call)
