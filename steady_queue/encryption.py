"""Encrypted tasks: ``@encrypted``, the key ring's sealing and opening, the keys' digests.

See ``steady_queue.task_options.encryption``, which holds them, and the README's
"Encrypted arguments".
"""

from .exceptions import EncryptionKeyMissing
from .task_options.encryption import (
    DIGEST_PREFIX,
    ENCRYPTED,
    SEALED_KEY,
    TEXT_PREFIX,
    digest,
    encrypted,
    encrypted_tasks,
    is_current,
    is_encrypted,
    is_sealed,
    key_problems,
    opened,
    opened_text,
    rotated,
    seal,
    seal_text,
)

__all__ = [
    "DIGEST_PREFIX",
    "ENCRYPTED",
    "SEALED_KEY",
    "TEXT_PREFIX",
    "EncryptionKeyMissing",
    "digest",
    "encrypted",
    "encrypted_tasks",
    "is_current",
    "is_encrypted",
    "is_sealed",
    "key_problems",
    "opened",
    "opened_text",
    "rotated",
    "seal",
    "seal_text",
]
