"""An encrypted workflow step: its copy of the return value is sealed, the next step reads it."""

from __future__ import annotations

import pytest
from django.test import override_settings

from steady_queue.encryption import is_sealed
from steady_queue.models import WorkflowStep
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from tests.tasks import groups as g

pytestmark = pytest.mark.django_db

SETTINGS = ["tests.tasks.encrypted.by_setting", "tests.tasks.groups.extract"]


@override_settings(STEADY_QUEUE_ENCRYPT_TASKS=SETTINGS)
def test_a_downstream_step_reads_an_encrypted_steps_result_opened():
    wf = Workflow("encrypted extract")
    a = wf.add(g.extract, args=("2026-11-26",))
    wf.add(g.transform, args=("2026-11-26",), after=[a])
    run = wf.enqueue()

    run_ready_jobs()

    assert g.transform.get_result(run["transform"].id).return_value == 6
    step = WorkflowStep.objects.get(run_id=run.id, name="extract")
    assert is_sealed(step.return_value) and "2026-11-26" not in repr(step.return_value)
