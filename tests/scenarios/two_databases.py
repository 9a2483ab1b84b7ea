"""Run Steady Queue with its tables in a second database; exits non-zero on any failure.

Started by test_two_databases with ``DJANGO_SETTINGS_MODULE=tests.scenarios.settings_two_dbs``:
pytest's own database setup knows one database, this needs two.
"""

from __future__ import annotations

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connections, transaction  # noqa: E402

from steady_queue.compat import TaskResultStatus, default_task_backend  # noqa: E402
from steady_queue.models import Job, Queue  # noqa: E402
from steady_queue.testing import run_ready_jobs  # noqa: E402
from tests import tasks  # noqa: E402
from tests.models import Account  # noqa: E402


class Rollback(Exception):
    pass


def tables(alias: str) -> set[str]:
    return set(connections[alias].introspection.table_names())


def migrate() -> None:
    for alias in ("default", "queue"):
        call_command("migrate", database=alias, verbosity=0)
    assert "steady_queue_jobs" in tables("queue")
    assert "steady_queue_jobs" not in tables("default")
    assert "tests_account" in tables("default")
    assert "tests_account" not in tables("queue")


def jobs_live_and_run_in_the_queue_database() -> None:
    result = tasks.add.enqueue(2, 3)
    assert Job.objects.using("queue").filter(pk=result.id).exists()
    assert run_ready_jobs()[0].return_value == 5
    assert default_task_backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL


def model_arguments_are_read_from_the_app_database() -> None:
    account = Account.objects.create(name="Acme")
    tasks.echo.enqueue(account)
    run_ready_jobs()
    assert tasks.CALLS[-1][0][0] == account


def operations_work_across_databases() -> None:
    failed = tasks.explode.enqueue()
    run_ready_jobs()
    Job.objects.get(pk=failed.id).retry()
    assert Queue("default").size == 1
    assert Job.objects.filter(pk=failed.id).discard_all() == 1


def an_app_rollback_does_not_undo_an_enqueue() -> None:
    # The trade-off of a separate database: the two commits are independent.
    before = Job.objects.count()
    try:
        with transaction.atomic():
            Account.objects.create(name="Rolled back")
            tasks.noop.enqueue()
            raise Rollback
    except Rollback:
        pass
    assert not Account.objects.filter(name="Rolled back").exists()
    assert Job.objects.count() == before + 1


def on_commit_ties_an_enqueue_to_the_app_transaction() -> None:
    before = Job.objects.count()
    try:
        with transaction.atomic():
            transaction.on_commit(tasks.noop.enqueue)
            raise Rollback
    except Rollback:
        pass
    assert Job.objects.count() == before


if __name__ == "__main__":
    migrate()
    jobs_live_and_run_in_the_queue_database()
    model_arguments_are_read_from_the_app_database()
    operations_work_across_databases()
    an_app_rollback_does_not_undo_an_enqueue()
    on_commit_ties_an_enqueue_to_the_app_transaction()
    call_command("check", verbosity=0)
    print("two databases: ok")
