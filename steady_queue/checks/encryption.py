"""Encrypted tasks' settings (``steady_queue.encryption``), checked at start."""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from .. import encryption

ERROR_ID = "steady_queue.E321"


def check_encryption(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """An error per problem of the key ring, when a task is encrypted or keys are given;
    one if ``STEADY_QUEUE_ENCRYPT_TASKS`` is not a list of task paths."""
    found = _task_list_problems()
    keys_given = getattr(settings, "STEADY_QUEUE_ENCRYPTION_KEYS", None) is not None
    if keys_given or (not found and encryption.encrypted_tasks()):
        found += encryption.key_problems()
    return [checks.Error(problem, id=ERROR_ID) for problem in found]


def _task_list_problems() -> list[str]:
    paths = getattr(settings, "STEADY_QUEUE_ENCRYPT_TASKS", None) or []
    if isinstance(paths, str) or not all(isinstance(path, str) and path for path in paths):
        return [f"STEADY_QUEUE_ENCRYPT_TASKS is {paths!r}: a list of task paths (strings)."]
    return []
