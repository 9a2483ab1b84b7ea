"""Encrypted tasks without a usable key ring are errors at start (manage.py check)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from steady_queue.checks.encryption import check_encryption

from ..encryption.conftest import KEY, NEW_KEY


def test_the_test_settings_pass():
    assert check_encryption() == []


def test_an_encrypted_task_without_keys_is_an_error():
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=None):
        (error,) = check_encryption()

    assert error.id == "steady_queue.E321"
    assert "STEADY_QUEUE_ENCRYPTION_KEYS must be a non-empty list" in error.msg


@pytest.mark.parametrize("bad", ["not a key", b"short", 42])
def test_a_malformed_key_is_an_error_naming_its_place(bad):
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=[NEW_KEY, bad]):
        (error,) = check_encryption()

    assert "STEADY_QUEUE_ENCRYPTION_KEYS[1] is not a Fernet key" in error.msg


def test_keys_given_as_one_string_are_an_error():
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=KEY):
        (error,) = check_encryption()

    assert "a non-empty list of Fernet keys" in error.msg


def test_the_task_list_must_be_a_list_of_paths():
    with override_settings(STEADY_QUEUE_ENCRYPT_TASKS="app.tasks.charge"):
        (error,) = check_encryption()

    assert "STEADY_QUEUE_ENCRYPT_TASKS is 'app.tasks.charge'" in error.msg


def test_no_encrypted_task_and_no_keys_is_fine():
    with override_settings(STEADY_QUEUE_ENCRYPTION_KEYS=None, STEADY_QUEUE_ENCRYPT_TASKS=[]):
        from steady_queue.task_options import encryption

        saved = dict(encryption._registry._options)
        encryption._registry._options.clear()
        try:
            assert check_encryption() == []
        finally:
            encryption._registry._options.update(saved)
