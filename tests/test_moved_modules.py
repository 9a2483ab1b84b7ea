"""Old import paths keep working after a module moved (steady_queue._moved), and the
package's lazy public API loads nothing before it is asked for."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from steady_queue import _moved


@pytest.mark.parametrize("old, new", sorted(_moved.MOVED.items()))
def test_an_old_path_imports_the_moved_module_itself(old, new):
    module = importlib.import_module(old)

    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new


@pytest.mark.parametrize(
    "statement",
    [
        "from steady_queue.queue import Queue",
        "from steady_queue.queue_selector import QueueSelector",
        "from steady_queue.recurring_schedule import RecurringSchedule",
        "from steady_queue.cron_times import next_time, recent_times",
        "from steady_queue.schedule_description import describe",
        "from steady_queue.process_errors import ProcessExitError, ProcessPrunedError",
        "from steady_queue.checks_queues import polls",
        "from steady_queue.recurring_checks import check_recurring_tasks",
        "from steady_queue.postgres import PostgresStorage",
        "from steady_queue.notify import READY_CHANNEL",
        "from steady_queue.concurrency import ConcurrencyLimit, limit_for, limits_concurrency",
        "from steady_queue.retries import RetryPolicy, SteadyQueueTask, policy_for, retry_policy",
        "from steady_queue.uniqueness import Unique, lock_key, unique, unique_for",
        "from steady_queue.rate_limits import WHOLE_TASK, RateLimit, bucket_key, rate_limit",
        "from steady_queue.recurring_task import CATCH_UP_LIMIT, Recurrence, discover, recurring",
        "from steady_queue.timeouts import seconds_for, timeout",
        "from steady_queue.task_options import DIGEST_PREFIX, TaskOptions, key_text, stored_key",
        "from steady_queue.log import claim_fields, job_fields, logger",
        "from steady_queue.tracing import enqueue_span, run_span",
        "from steady_queue.processes.pool import Pool",
        "from steady_queue.processes.recycling import EXIT_STATUSES, Recycling, describe",
        "from steady_queue.processes.async_slots import AsyncSlots",
        "from steady_queue.processes.async_claims import ClaimRoom, sort_claims",
        "from steady_queue.processes.run_checks import Cancellations, StuckThreads",
        "from steady_queue.processes.unrecorded import end_unrecorded",
        "from steady_queue.processes.worker import Worker",
        "from steady_queue.perform import Call, error_details, perform, perform_then_claim",
        "from steady_queue.runner.perform import performing",
        "from steady_queue.deadlines import call_with_deadline, end_for, watchdog",
        "from steady_queue.cancellation import forget, mark, requested, seen",
        "from steady_queue.storage.postgres import PostgresStorage",
        "from steady_queue.storage.mysql import MysqlStorage, PICKED, TAKEN",
        "from steady_queue.storage.sqlite import SqliteStorage, available, write_transaction",
        "from steady_queue.storage.sqlite import finish_job, record_success, success_values",
        "from steady_queue.models.job_operations import executions_of, in_batches",
        "from steady_queue.models.job_retryable import state_of",
        "from steady_queue.models.throttled_execution import ThrottledExecution",
        "from steady_queue.models.waiting_execution import WaitingExecution",
        "from steady_queue.models.outcomes import Failure, Success, Throttle",
        "from steady_queue.models.slot_hand_on import SlotHandOn",
        "from steady_queue.models.claimed_lifecycle import ClaimedLifecycle",
        "from steady_queue.models.claimed_finish import Failure, LastResort, Outcome, Success",
        "from steady_queue.models.claimed_finish import NOT_STORED, Release, Reschedule, Throttle",
    ],
)
def test_names_import_from_their_old_module(statement):
    exec(statement, {})


def test_a_module_that_became_a_package_is_loaded_once():
    # steady_queue.postgres, then steady_queue.storage.postgres: one package, its
    # modules under their own names only (none loaded again under the old name).
    code = (
        "import sys, steady_queue, django\n"
        "import steady_queue.postgres as old\n"
        "import steady_queue.storage.postgres as new\n"
        "from steady_queue.storage.postgres import storage\n"
        "assert old is new and old.PostgresStorage is storage.PostgresStorage\n"
        "print(sorted(m for m in sys.modules if m.startswith('steady_queue.postgres')))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    setup = "import django; django.setup()\n"
    done = subprocess.run(
        [sys.executable, "-c", setup + code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['steady_queue.postgres']"


def test_modules_that_did_not_move_are_not_intercepted():
    assert _moved.FINDER.find_spec("steady_queue.backend") is None
    assert _moved.FINDER.find_spec("steady_queue.nothing_here") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("steady_queue.nothing_here")


def test_the_public_api_is_importable_from_the_package():
    import steady_queue

    for name in steady_queue._PUBLIC:
        assert getattr(steady_queue, name) is not None, name
        assert name in dir(steady_queue)
    with pytest.raises(AttributeError):
        steady_queue.no_such_name  # noqa: B018


def test_importing_the_package_loads_no_model_and_no_django_app():
    # A fresh interpreter: settings.py does `import steady_queue` before Django is set up.
    code = (
        "import sys, steady_queue\n"
        "steady_queue.shutdown_timeout\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('steady_queue.', 'django.db')))\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['steady_queue._moved']"
