"""The command line shows an encrypted task's data as "encrypted" and audits no plaintext."""

from __future__ import annotations

import pytest

from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests.observability.conftest import run_command
from tests.tasks import encrypted as tasks

from .conftest import CARD

pytestmark = pytest.mark.django_db


def test_the_job_list_shows_an_encrypted_error_as_encrypted():
    failed = tasks.explode.enqueue(CARD)
    run_ready_jobs()

    result = run_command("steady_queue_jobs", "list", "--status", "failed")

    line = next(line for line in result.lines[1:] if line.split()[0] == failed.id)
    assert "builtins.ValueError: encrypted" in line
    assert CARD not in result.output


def test_a_duplicate_from_the_command_line_shows_and_audits_encrypted_arguments():
    job = tasks.by_setting.enqueue(CARD)

    result = run_command("steady_queue_jobs", "duplicate", job.id, "--yes")

    assert result.code == 0, result.output
    assert CARD not in result.output
    entry = AuditEntry.objects.get(action="duplicate")
    assert CARD not in repr(entry.details) and "encrypted" in repr(entry.details)
