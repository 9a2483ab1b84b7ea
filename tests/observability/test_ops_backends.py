"""``--backend ALIAS`` on every operations command: each acts on that backend's queue database.

The test settings' "billing" backend keeps its jobs in a second database; here it
also declares the queue "invoices", which no backend of the default database does.
"""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError
from django.test import override_settings

from steady_queue import db
from steady_queue.models import Job, Pause, RecurringTask
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests import tasks
from tests.acceptance.api import BACKPORT
from tests.tasks import billing

from .conftest import register, run_command

pytestmark = [
    pytest.mark.django_db(databases=["default", "billing"]),
    pytest.mark.urls("tests.dashboard.urls_two_backends"),
]
DUMMY = f"{'django_tasks' if BACKPORT else 'django.tasks'}.backends.dummy.DummyBackend"
COMMANDS = ["steady_queue_jobs", "steady_queue_queues", "steady_queue_health"]
COMMANDS += ["steady_queue_recurring"]
FIRST_ARGUMENTS = {"steady_queue_jobs": ["list"], "steady_queue_queues": ["list"]}
FIRST_ARGUMENTS["steady_queue_recurring"] = ["list"]


@pytest.fixture(autouse=True)
def invoices(settings):
    """The billing backend declares "invoices" as well."""
    billing_backend = settings.TASKS["billing"]
    queues = ["default", "invoices"]
    settings.TASKS = {**settings.TASKS, "billing": {**billing_backend, "QUEUES": queues}}


def pauses(alias: str) -> list[str]:
    return list(Pause.objects.db_manager(alias).values_list("queue_name", flat=True))


def states(alias: str) -> list[str]:
    return [job.state for job in Job.objects.db_manager(alias).with_execution().order_by("pk")]


def refused(*args: str) -> CommandError:
    with pytest.raises(CommandError) as raised:
        run_command(*args)
    assert raised.value.returncode == 2
    return raised.value


def test_a_queue_only_another_database_declares_is_refused_and_nothing_changes():
    error = refused("steady_queue_queues", "pause", "invoices", "--yes")
    assert "Queue 'invoices' belongs to backend billing" in str(error)
    assert "run again with --backend billing" in str(error)
    assert pauses("default") == [] and pauses("billing") == []
    assert not AuditEntry.objects.exists()


def test_pause_with_backend_pauses_that_database_and_the_entry_says_so():
    result = run_command(
        "steady_queue_queues", "pause", "invoices", "--yes", "--backend", "billing"
    )
    assert result.lines[0] == (
        "Queue invoices is paused: workers take no more jobs from it. (backend billing)"
    )
    assert pauses("billing") == ["invoices"] and pauses("default") == []
    entry = AuditEntry.objects.get()
    assert (entry.details["backend"], entry.details["database"]) == ("billing", "billing")
    assert entry.link == "/jobs-billing/queues/invoices/"  # the billing mount's page

    run_command("steady_queue_queues", "resume", "invoices", "--backend", "billing")
    assert pauses("billing") == []


def test_a_pause_left_in_the_wrong_database_can_still_be_resumed_there():
    Pause.objects.db_manager("default").create(queue_name="invoices")
    result = run_command("steady_queue_queues", "resume", "invoices")
    assert result.lines[0] == "Queue invoices is running again."
    assert pauses("default") == []


def test_queues_list_shows_the_queues_of_the_backend_database():
    billing.invoice.using(queue_name="invoices").enqueue(1)
    Pause.objects.db_manager("billing").create(queue_name="invoices")
    default_rows = run_command("steady_queue_queues", "list").lines[1:]
    assert "invoices" not in {row.split()[0] for row in default_rows}
    lines = run_command("steady_queue_queues", "list", "--backend", "billing").lines[1:]
    rows = {line.split()[0]: line.split()[1:] for line in lines}
    assert set(rows) == {"default", "invoices"}  # billing's QUEUES
    assert rows["invoices"][0] == "1" and rows["invoices"][2] == "paused"


def test_jobs_with_backend_act_on_that_database_only_and_are_audited_with_it():
    billing.refuse.enqueue(7)
    with db.using_alias("billing"):
        run_ready_jobs()
    tasks.explode.enqueue()
    run_ready_jobs()
    result = run_command("steady_queue_jobs", "retry", "--yes", "--backend", "billing")
    assert result.lines[0] == "1 failed job retried."
    assert states("billing") == ["ready"] and states("default") == ["failed"]
    entry = AuditEntry.objects.get()
    assert entry.details["backend"] == "billing"
    assert entry.link == "/jobs-billing/failed/"


def test_jobs_refuse_a_queue_of_another_database():
    billing.invoice.using(queue_name="invoices").enqueue(1)
    error = refused("steady_queue_jobs", "cancel", "--status", "ready", "--queue", "invoices")
    assert "--backend billing" in str(error)
    arguments = ["cancel", "--status", "ready", "--queue", "invoices", "--yes"]
    result = run_command("steady_queue_jobs", *arguments, "--backend", "billing")
    assert result.lines[0] == "1 ready job in queue invoices cancelled."
    assert states("billing") == ["failed"]


def test_health_with_backend_reads_the_processes_of_that_database():
    with db.using_alias("billing"):
        supervisor = register("Supervisor")
        register("Worker", queues=["*"], supervisor=supervisor)
        register("Dispatcher", supervisor=supervisor)
    assert run_command("steady_queue_health", "--backend", "billing").lines == ["OK"]
    assert run_command("steady_queue_health").code == 1  # nothing runs for the default one
    error = refused("steady_queue_health", "--queue", "invoices")
    assert "--backend billing" in str(error)


def test_recurring_with_backend_reads_and_changes_that_database():
    RecurringTask.objects.db_manager("billing").create(
        key="monthly", task_path="tests.tasks.billing.invoice", schedule="@monthly"
    )
    assert run_command("steady_queue_recurring", "list").lines[1:] == []
    [row] = run_command("steady_queue_recurring", "list", "--backend", "billing").lines[1:]
    assert row.split()[:2] == ["monthly", "enabled"]
    run_command("steady_queue_recurring", "disable", "monthly", "--yes", "--backend", "billing")
    assert not RecurringTask.objects.db_manager("billing").get().enabled
    assert AuditEntry.objects.get().link == "/jobs-billing/recurring/monthly/"


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_backend_is_a_usage_error(command):
    error = refused(command, *FIRST_ARGUMENTS.get(command, []), "--backend", "nope")
    assert str(error) == "--backend 'nope': there is no such backend in TASKS."


@pytest.mark.parametrize("command", COMMANDS)
def test_a_backend_that_is_not_steady_queue_is_a_usage_error(command, settings):
    with override_settings(TASKS={**settings.TASKS, "other": {"BACKEND": DUMMY}}):
        error = refused(command, *FIRST_ARGUMENTS.get(command, []), "--backend", "other")
    assert str(error) == "--backend 'other' is not a Steady Queue backend."


def test_backend_default_is_the_project_queue_database():
    tasks.noop.enqueue()
    billing.invoice.enqueue(1)
    result = run_command("steady_queue_jobs", "list", "--backend", "default")
    assert result.lines[0] == "1 job matches."
    assert "tests.tasks.noop" in result.lines[1]
