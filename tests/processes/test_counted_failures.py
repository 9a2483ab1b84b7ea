"""A SIGKILL before the flush loses no failure nor retry count (issue 25, item 6).

The real ``manage.py steady_queue`` with a flush interval (and heartbeat) far longer
than the test: what the tally holds is never written, so a success is lost with the
kill, as documented, while the failure and the retry were written with their endings.
"""

from __future__ import annotations

import pytest

from steady_queue.models import FailedExecution, Job, ScheduledExecution, TaskRollup
from tests import tasks
from tests.processes.conftest import wait_until
from tests.tasks import acceptance

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

NEVER = "600"  # seconds: no flush, no heartbeat during the test


def all_time(task) -> TaskRollup | None:
    rows = TaskRollup.objects.filter(task_path=task.module_path, period=TaskRollup.all_time())
    return rows.first()


def test_failures_and_retries_are_counted_though_the_processes_are_killed_before_a_flush(
    start_supervisor,
):
    supervisor = start_supervisor(
        "WORKER",  # no dispatcher: the retry stays scheduled
        children=1,
        SQ_METRICS_FLUSH_INTERVAL=NEVER,
        SQ_HEARTBEAT_INTERVAL=NEVER,
        SQ_ALIVE_THRESHOLD="1200",
    )
    failing = int(acceptance.fail.enqueue("boom").id)
    retried = int(acceptance.policy_in_decorator.enqueue().id)
    succeeding = int(tasks.noop.enqueue().id)

    wait_until(lambda: FailedExecution.objects.filter(job_id=failing).exists(), what="a failure")
    wait_until(
        lambda: (
            ScheduledExecution.objects.filter(job_id=retried).exists()
            and len(Job.objects.get(pk=retried).attempts) == 1
        ),
        what="a retry",
    )
    wait_until(lambda: Job.objects.get(pk=succeeding).finished_at, what="a success")

    supervisor.kill_all()  # SIGKILL to the supervisor and its worker at once

    assert all_time(tasks.noop) is None  # a success waits for the flush: lost, as documented
    failed, retry = all_time(acceptance.fail), all_time(acceptance.policy_in_decorator)
    assert (failed.failed, failed.runs) == (1, 1)
    assert (retry.retried, retry.failed, retry.runs) == (1, 0, 1)
    hours = TaskRollup.objects.exclude(period=TaskRollup.all_time())
    assert sorted(hours.values_list("failed", "retried")) == [(0, 1), (1, 0)]
