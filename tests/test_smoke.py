import pytest

from steady_queue.compat import TaskResultStatus, default_task_backend
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_enqueue_and_run():
    result = tasks.add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY
    ran = run_ready_jobs()
    assert [r.id for r in ran] == [result.id]
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert result.worker_ids == ["in-process"]


def test_failure_records_traceback():
    result = tasks.explode.enqueue("kaput")
    run_ready_jobs()
    result = default_task_backend.get_result(result.id)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path == "builtins.ValueError"
    assert "kaput" in result.errors[0].traceback
