"""The large-data command: finished jobs past the template are copies made by the database."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from steady_queue.models import Batch, Job, WorkflowRun
from tests import tasks

# Transactional: the fill command ends with VACUUM ANALYZE, which refuses a transaction.
pytestmark = pytest.mark.django_db(transaction=True)

NOTHING_ELSE = {
    "failed": 0,
    "scheduled": 0,
    "ready": 0,
    "blocked": 0,
    "throttled": 0,
    "claimed": 0,
    "batches": 0,
    "workflows": 0,
}


def test_finished_jobs_beyond_the_template_are_copies_with_their_own_ids():
    out = StringIO()
    call_command(
        "steady_queue_dashboard_fill", finished=25, template=10, stdout=out, **NOTHING_ELSE
    )

    finished = Job.objects.filter(finished_at__isnull=False)
    assert finished.count() == 25
    assert len(set(finished.values_list("pk", flat=True))) == 25
    assert "15 finished jobs copied" in out.getvalue()
    copy = finished.order_by("-pk").first()
    original = Job.objects.get(pk=copy.pk - 20)
    assert (copy.task_path, copy.finished_at) == (original.task_path, original.finished_at)
    # The id sequence moved past the copies: a new job gets an id of its own.
    assert int(tasks.noop.enqueue().id) > copy.pk


def test_batches_and_workflow_runs_are_made_as_the_engine_leaves_them(admin_client):
    sizes = {**NOTHING_ELSE, "batches": 4, "workflows": 3}
    call_command("steady_queue_dashboard_fill", finished=0, stdout=StringIO(), **sizes)

    for batch in Batch.objects.all():
        jobs = Job.objects.filter(batch_id=batch.pk)
        assert batch.total == jobs.count()
        assert batch.succeeded == jobs.filter(finished_at__isnull=False).count()
        assert batch.failed == jobs.filter(failed_execution__isnull=False).count()
        assert (batch.finished_at is None) == jobs.filter(ready_execution__isnull=False).exists()
        for entry in batch.callback_jobs:
            assert Job.objects.filter(pk=entry["job_id"], ready_execution__isnull=False).exists()
        html = admin_client.get(f"/jobs/batches/{batch.pk}/").content.decode()
        assert f"of {batch.total}</span>" in html
    assert admin_client.get("/jobs/batches/").content.decode().count('id="batch-row-') == 4

    succeeded, failed, going = WorkflowRun.objects.order_by("pk")
    assert (succeeded.succeeded, succeeded.finished_at is not None) == (7, True)
    html = admin_client.get(f"/jobs/workflows/{failed.pk}/").content.decode()
    assert html.count('class="node state-dependency-failed"') == 2
    assert html.count('class="node state-failed"') == 1
    assert "blocked:</strong>" in html
    html = admin_client.get(f"/jobs/workflows/{going.pk}/").content.decode()
    assert html.count('class="node state-waiting"') == 2
    assert html.count('class="node state-ready"') == 2
    assert admin_client.get("/jobs/waiting/").content.decode().count('id="job-row-') == 2
