"""The key ring: rotation re-encrypts (then the old key can go), a missing key fails the
run with a clear error before the task's body, digests keep keys equal across rotation."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import override_settings

from steady_queue.encryption import digest, is_sealed, opened, opened_text
from steady_queue.exceptions import EncryptionKeyMissing
from steady_queue.models import FailedExecution, Job, UniqueLock
from steady_queue.ops import key_rotation
from steady_queue.testing import run_ready_jobs
from tests.tasks import encrypted as tasks

from .conftest import CARD, KEY, NEW_KEY, OTHER_KEY, raw_rows

pytestmark = pytest.mark.django_db(transaction=True)


def rotate(**options) -> str:
    out = io.StringIO()
    call_command("steady_queue_rotate_keys", stdout=out, **options)
    return out.getvalue()


def test_rotation_reencrypts_with_the_newest_key_and_the_old_one_can_go():
    failed = tasks.explode.enqueue(CARD)
    run_ready_jobs()
    waiting = tasks.charge.enqueue(CARD, amount=7)
    before = Job.objects.get(pk=waiting.id).arguments

    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[NEW_KEY, KEY]):
        dry = rotate(dry_run=True, batch_size=1)
        assert Job.objects.get(pk=waiting.id).arguments == before  # a dry run changes nothing
        assert "steady_queue_jobs: would re-encrypt 1" in dry and "Would re-encrypt 3 rows" in dry
        output = rotate(batch_size=1)
        assert "Re-encrypted 3 rows; 0 unreadable" in output  # 2 jobs, 1 failed execution
        assert "Re-encrypted 0 rows" in rotate()  # nothing left: the old key may go

    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[NEW_KEY]):
        assert CARD in opened_text(FailedExecution.objects.get(job_id=failed.id).backtrace)
        assert opened(Job.objects.get(pk=waiting.id).arguments)["args"] == [CARD]
        run_ready_jobs()
        assert tasks.SEEN == [(CARD,), (CARD, 7)]
        assert tasks.charge.get_result(waiting.id).return_value == {"receipt": f"paid with {CARD}"}
    assert CARD not in raw_rows("steady_queue_jobs", "id = %s", [waiting.id])


def test_a_job_whose_key_is_gone_fails_with_a_clear_error_and_never_runs():
    result = tasks.charge.enqueue(CARD)

    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[OTHER_KEY]):
        run_ready_jobs()

    assert tasks.SEEN == []  # its body never ran
    execution = FailedExecution.objects.get(job_id=result.id)
    assert execution.exception_class == "steady_queue.exceptions.EncryptionKeyMissing"
    # Its error is sealed too, with the key the worker had.
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[OTHER_KEY]):
        assert "removed from the ring" in opened_text(execution.message)


def test_reading_a_result_whose_key_is_gone_raises_the_clear_error():
    result = tasks.by_setting.enqueue(CARD)
    with (
        override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[OTHER_KEY]),
        pytest.raises(EncryptionKeyMissing, match="removed from the ring"),
    ):
        tasks.by_setting.get_result(result.id)


def test_rotation_counts_what_no_key_opens_and_leaves_it():
    result = tasks.charge.enqueue(CARD)
    stored = Job.objects.get(pk=result.id).arguments
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[OTHER_KEY]):
        counts = key_rotation.rotate(report=lambda line: None)
    assert counts["steady_queue_jobs"].unreadable == 1
    assert Job.objects.get(pk=result.id).arguments == stored


def test_the_rotation_refuses_a_ring_that_is_not_set():
    from django.core.management.base import CommandError

    with (
        override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=None),
        pytest.raises(CommandError, match="STEADY_QUEUE_ENCRYPTION_KEYS"),
    ):
        rotate()


def test_two_jobs_with_the_same_unique_key_conflict_and_the_column_holds_a_digest():
    first = tasks.once_per_card.enqueue(CARD)
    second = tasks.once_per_card.enqueue(CARD)
    other = tasks.once_per_card.enqueue("5500-0000-0000-0004")

    assert second.id == first.id  # the same key: the job that holds it
    assert other.id != first.id
    job = Job.objects.get(pk=first.id)
    assert job.unique_key == digest(CARD) and job.unique_key.startswith("hmac:")
    assert CARD not in raw_rows("steady_queue_jobs", "id = %s", [first.id])
    assert CARD not in repr(list(UniqueLock.objects.values_list()))


def test_the_digest_stays_the_same_across_a_rotation():
    first = tasks.once_per_card.enqueue(CARD)
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[NEW_KEY, KEY]):
        rotate()
        again = tasks.once_per_card.enqueue(CARD)
    assert again.id == first.id


def test_concurrency_and_rate_limit_keys_are_digests():
    limited = Job.objects.get(pk=tasks.limited.enqueue(CARD).id)
    rated = Job.objects.get(pk=tasks.rate_limited.enqueue(CARD).id)

    assert CARD not in limited.concurrency_key and limited.concurrency_key.startswith("hmac:")
    assert rated.rate_limit_key == digest(CARD)
    assert is_sealed(limited.arguments)
    assert CARD not in raw_rows("steady_queue_semaphores", "1 = 1", [])
    assert CARD not in raw_rows("steady_queue_rate_limit_buckets", "1 = 1", [])
    run_ready_jobs()
    assert Job.objects.filter(pk__in=[limited.pk, rated.pk], finished_at__isnull=False).count() == 2


def test_digests_are_keyed_by_the_digest_key_when_it_is_set():
    plain = digest(CARD)
    with override_settings(STEADY_QUEUE_DIGEST_KEY="another secret"):
        assert digest(CARD) != plain
