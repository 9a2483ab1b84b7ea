"""An encrypted task's data at rest: no plaintext in any column, the plaintext in the run."""

from __future__ import annotations

import pytest
from django.test import override_settings

from steady_queue.backend import enqueue_all
from steady_queue.encryption import ENCRYPTED, is_sealed, opened_text
from steady_queue.models import FailedExecution, Job
from steady_queue.testing import run_ready_jobs
from tests.tasks import encrypted as tasks

from .conftest import CARD, raw_rows

pytestmark = pytest.mark.django_db(transaction=True)


def job_bytes(job_id) -> str:
    return raw_rows("steady_queue_jobs", "id = %s", [job_id])


def test_arguments_result_metadata_progress_and_log_lines_are_stored_sealed(capturing):
    result = tasks.charge.enqueue(CARD, amount=42)
    assert CARD not in job_bytes(result.id)

    run_ready_jobs()

    assert tasks.SEEN == [(CARD, 42)]  # the run saw the plaintext
    stored = job_bytes(result.id)
    assert CARD not in stored and "paid with" not in stored and "halfway" not in stored
    logs = raw_rows("steady_queue_job_log_lines", "job_id = %s", [result.id])
    assert CARD not in logs and "charging" not in logs
    job = Job.objects.get(pk=result.id)
    assert is_sealed(job.arguments) and is_sealed(job.return_value) and is_sealed(job.metadata)
    messages = list(job.log_lines.values_list("message", flat=True))
    assert messages and all(is_sealed(message) for message in messages)
    assert f"charging card {CARD}" in [opened_text(message) for message in messages]


def test_the_application_reads_its_result_opened():
    result = tasks.charge.enqueue(CARD)
    run_ready_jobs()

    fetched = tasks.charge.get_result(result.id)
    assert fetched.return_value == {"receipt": f"paid with {CARD}"}
    assert fetched.args == [CARD] and fetched.kwargs == {}


def test_an_error_message_and_traceback_are_stored_sealed_its_class_readable():
    result = tasks.explode.enqueue(CARD)
    run_ready_jobs()

    assert tasks.SEEN == [(CARD,)]
    assert CARD not in job_bytes(result.id)
    failed = raw_rows("steady_queue_failed_executions", "job_id = %s", [result.id])
    assert CARD not in failed and "declined" not in failed
    execution = FailedExecution.objects.get(job_id=result.id)
    assert execution.exception_class == "builtins.ValueError"
    assert is_sealed(execution.message) and is_sealed(execution.backtrace)
    # The application holds the keys: its TaskResult's traceback is opened.
    assert CARD in tasks.explode.get_result(result.id).errors[-1].traceback


def test_the_setting_encrypts_a_task_without_the_decorator():
    result = tasks.by_setting.enqueue(CARD)
    run_ready_jobs()

    assert tasks.SEEN == [(CARD,)]
    assert CARD not in job_bytes(result.id)
    assert tasks.by_setting.get_result(result.id).return_value == f"done {CARD}"


def test_a_plain_task_is_stored_as_before():
    result = tasks.plain.enqueue(CARD)
    assert Job.objects.get(pk=result.id).arguments == {"args": [CARD], "kwargs": {}}


def test_the_bulk_fast_path_seals_every_job():
    results = enqueue_all([(tasks.by_setting, (f"{CARD}-{i}",), {}) for i in range(60)])
    ids = [int(r.id) for r in results]
    placeholders = ", ".join(["%s"] * len(ids))
    assert CARD not in raw_rows("steady_queue_jobs", f"id IN ({placeholders})", ids)

    run_ready_jobs()
    assert sorted(tasks.SEEN) == sorted((f"{CARD}-{i}",) for i in range(60))


def test_an_encrypted_enqueue_without_keys_is_refused_before_anything_is_written():
    from django.core.exceptions import ImproperlyConfigured

    before = Job.objects.count()
    with (
        override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[]),
        pytest.raises(ImproperlyConfigured, match="STEADY_QUEUE_ENCRYPTION_KEYS"),
    ):
        tasks.charge.enqueue(CARD)
    assert Job.objects.count() == before


def test_the_display_word_is_encrypted():
    assert ENCRYPTED == "encrypted"
