"""One ``manage.py steady_queue --backend default --backend billing`` serves both databases."""

from __future__ import annotations

import os
import signal

import pytest

from steady_queue.models import Job, Process
from tests import tasks
from tests.faults.harness import children_of
from tests.tasks import billing

from .conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "billing"])
BOTH = ("--backend", "default", "--backend", "billing")


def finished(alias: str) -> int:
    return Job.objects.db_manager(alias).filter(finished_at__isnull=False).count()


def supervisors(alias: str) -> list[Process]:
    return list(Process.objects.db_manager(alias).filter(kind="Supervisor"))


def test_one_command_runs_the_jobs_of_both_databases_and_stops_on_term(start_supervisor):
    command = start_supervisor("WORKER", *BOTH)
    for n in range(5):
        tasks.noop.enqueue()
        billing.invoice.enqueue(n)
    wait_until(lambda: finished("default") == 5 and finished("billing") == 5, what="10 jobs")
    # A supervisor of its own in each database, both children of the command.
    [on_default], [on_billing] = supervisors("default"), supervisors("billing")
    assert on_default.pid != on_billing.pid
    assert {on_default.pid, on_billing.pid} <= set(children_of(command.pid))
    results = Job.objects.db_manager("billing").values_list("return_value", flat=True)
    assert sorted(results) == [f"invoice {n}" for n in range(5)]

    command.send(signal.SIGTERM)
    assert command.wait() == 0
    assert supervisors("default") == [] and supervisors("billing") == []  # deregistered


def test_when_one_supervisor_dies_the_command_stops_the_other_and_fails(start_supervisor):
    command = start_supervisor("WORKER", *BOTH)
    wait_until(lambda: supervisors("default") and supervisors("billing"), what="2 supervisors")
    [on_billing] = supervisors("billing")
    os.kill(on_billing.pid, signal.SIGKILL)
    assert command.wait() != 0  # it returns once both supervisors are gone
    assert supervisors("default") == []  # stopped gracefully: its row removed


def test_an_unknown_backend_is_refused(start_supervisor):
    command = start_supervisor("WORKER", "--backend", "nope")
    assert command.wait() != 0
    assert "--backend 'nope': there is no such backend in TASKS" in command.output()
