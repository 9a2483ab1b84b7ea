"""The large-data command: finished jobs past the template are copies made by the database."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from steady_queue.models import Job
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
