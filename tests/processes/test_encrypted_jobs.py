"""Encrypted jobs run by a real ``manage.py steady_queue``: the run sees the plaintext, the
tables never hold it, and a job whose key the worker lacks fails without running."""

from __future__ import annotations

import signal

import pytest
from django.test import override_settings

from steady_queue.models import FailedExecution, Job
from tests.encryption.conftest import CARD, OTHER_KEY, raw_rows
from tests.processes.conftest import wait_until
from tests.tasks import encrypted as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_a_worker_runs_encrypted_jobs_and_stores_no_plaintext(start_supervisor, tmp_path):
    seen = tmp_path / "cards"
    supervisor = start_supervisor("FAST", children=2)
    done = tasks.record_card.enqueue(str(seen), CARD)
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[OTHER_KEY]):
        unreadable = tasks.record_card.enqueue(str(seen), "5500-0000-0000-0004")

    wait_until(
        lambda: (
            Job.objects.filter(pk=done.id, finished_at__isnull=False).exists()
            and FailedExecution.objects.filter(job_id=unreadable.id).exists()
        ),
        what="one job finished, one failed",
    )
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0

    assert seen.read_text() == f"{CARD}\n"  # the run saw the plaintext; the other never ran
    failed = FailedExecution.objects.get(job_id=unreadable.id)
    assert failed.exception_class == "steady_queue.exceptions.EncryptionKeyMissing"
    assert CARD not in raw_rows("steady_queue_jobs", "1 = 1", [])
    assert CARD not in raw_rows("steady_queue_job_log_lines", "1 = 1", [])
    assert tasks.record_card.get_result(done.id).return_value == f"recorded {CARD}"
