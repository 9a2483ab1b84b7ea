"""Encrypted arguments: a task's arguments, result, errors and captured output kept sealed.

    from steady_queue.encryption import encrypted

    @encrypted                   # or settings.STEADY_QUEUE_ENCRYPT_TASKS = ["app.tasks.charge"]
    @task()
    def charge(card_number, amount): ...

    # settings.py: Fernet keys, the newest first; the first encrypts, all decrypt.
    STEADY_QUEUE_ENCRYPTION_KEYS = [os.environ["SQ_KEY_2"], os.environ["SQ_KEY_1"]]

A job of an encrypted task stores its arguments and return value as a sealed JSON
value (``{"__sq_encrypted__": "<Fernet token>"}``), the message and traceback of its
errors, its metadata, its progress message and its captured log lines as sealed text
(``sq-encrypted:<token>``). The tokens are the ``cryptography`` package's Fernet
(AES-128-CBC with HMAC-SHA256), over a ``MultiFernet`` of the key ring. Its concurrency,
unique, rate limit and fairness keys are computed from the plain arguments at enqueue
and stored as digests (``digest``): HMAC-SHA256 keyed by ``STEADY_QUEUE_DIGEST_KEY``, or
by Django's ``SECRET_KEY`` without it; the ring plays no part in them, so the same
arguments keep the same key across a rotation.

Nothing here imports a model: the models seal and open values with these functions.
The public face is ``steady_queue.encryption``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.crypto import salted_hmac

from ..compat import Task
from ..exceptions import EncryptionKeyMissing
from . import TaskOptions

#: What a reader without the reveal permission sees in place of a sealed value.
ENCRYPTED = "encrypted"
#: The one key of a sealed JSON value.
SEALED_KEY = "__sq_encrypted__"
#: What starts a sealed text.
TEXT_PREFIX = "sq-encrypted:"
#: What starts a key stored as its digest.
DIGEST_PREFIX = "hmac:"

# Task module path -> True; filled when the task's module is imported.
_registry: TaskOptions[bool] = TaskOptions()


def encrypted(task: Task) -> Task:
    """Store the jobs of ``task`` encrypted (a decorator above ``@task()``)."""
    if not isinstance(task, Task):
        raise TypeError("@encrypted goes above @task(): it takes a Task, not a function.")
    _registry.register(task, True)
    return task


def is_encrypted(task_path: str) -> bool:
    """Whether the jobs of the task at ``task_path`` are stored encrypted."""
    return task_path in _setting_tasks() or bool(_registry.get(task_path))


def encrypted_tasks() -> list[str]:
    """The task paths declared encrypted so far (decorated, imported, or in the setting)."""
    declared = [path for path, on in _registry._options.items() if on]
    return sorted({*declared, *_setting_tasks()})


def seal(value: Any) -> dict[str, str]:
    """``value`` (plain JSON) sealed with the newest key, as a JSON object to store."""
    return {SEALED_KEY: _ring().encrypt(json.dumps(value).encode()).decode()}


def seal_text(text: str) -> str:
    """``text`` sealed with the newest key, as text to store."""
    return TEXT_PREFIX + _ring().encrypt(text.encode()).decode()


def is_sealed(value: Any) -> bool:
    """Whether ``value`` (a stored JSON value or text) is sealed."""
    if isinstance(value, str):
        return value.startswith(TEXT_PREFIX)
    return isinstance(value, dict) and len(value) == 1 and SEALED_KEY in value


def opened(value: Any) -> Any:
    """The plain value of a stored JSON ``value`` (itself if not sealed).

    ``EncryptionKeyMissing`` if no key of the ring opens it: never a guess.
    """
    if not is_sealed(value) or isinstance(value, str):
        return value
    return json.loads(_decrypt(value[SEALED_KEY]))


def opened_text(text: str) -> str:
    """The plain text of a stored ``text`` (itself if not sealed); see ``opened``."""
    if not (isinstance(text, str) and text.startswith(TEXT_PREFIX)):
        return text
    return _decrypt(text.removeprefix(TEXT_PREFIX)).decode()


def rotated(value: Any) -> Any:
    """A stored value (JSON or text) sealed again with the newest key; plain ones as they are."""
    if not is_sealed(value):
        return value
    token = value[len(TEXT_PREFIX) :] if isinstance(value, str) else value[SEALED_KEY]
    try:
        fresh = _ring().rotate(token.encode()).decode()
    except _invalid_token() as exc:
        raise EncryptionKeyMissing(_MISSING) from exc
    return TEXT_PREFIX + fresh if isinstance(value, str) else {SEALED_KEY: fresh}


def is_current(value: Any) -> bool:
    """Whether a sealed ``value`` was sealed with the newest key (rotation skips it)."""
    from cryptography.fernet import Fernet

    token = value[len(TEXT_PREFIX) :] if isinstance(value, str) else value[SEALED_KEY]
    newest = Fernet(_keys()[0])
    try:
        newest.extract_timestamp(token.encode())  # checks the signature with this key only
    except _invalid_token():
        return False
    return True


def digest(key: str) -> str:
    """The stored form of a concurrency, unique, rate limit or fairness ``key``.

    Keyed, so that a guessable key (an account number) cannot be found back by hashing
    candidates; not keyed by the ring, so that a rotation keeps every key the same.
    """
    secret = getattr(settings, "STEADY_QUEUE_DIGEST_KEY", None) or settings.SECRET_KEY
    mac = salted_hmac("steady_queue.encryption.digest", key, secret=secret, algorithm="sha256")
    return DIGEST_PREFIX + mac.hexdigest()


def key_problems() -> list[str]:
    """What is wrong with ``STEADY_QUEUE_ENCRYPTION_KEYS`` (empty: nothing)."""
    try:
        from cryptography.fernet import Fernet
    except ImportError:
        return ["the cryptography package is not installed (pip install steady-queue[encryption])"]
    keys = getattr(settings, "STEADY_QUEUE_ENCRYPTION_KEYS", None) or []
    if isinstance(keys, str | bytes) or not keys:
        return ["STEADY_QUEUE_ENCRYPTION_KEYS must be a non-empty list of Fernet keys"]
    problems = []
    for index, key in enumerate(keys):
        try:
            Fernet(key)
        except (ValueError, TypeError):
            problems.append(
                f"STEADY_QUEUE_ENCRYPTION_KEYS[{index}] is not a Fernet key "
                "(32 url-safe base64-encoded bytes, as Fernet.generate_key() makes)"
            )
    return problems


_MISSING = (
    "No key of STEADY_QUEUE_ENCRYPTION_KEYS opens this job's encrypted data: the key it "
    "was sealed with was removed from the ring (or the data is corrupt). Put the key back "
    "to run it."
)


def _decrypt(token: str) -> bytes:
    try:
        return _ring().decrypt(token.encode())
    except _invalid_token() as exc:
        raise EncryptionKeyMissing(_MISSING) from exc


def _ring():
    return _ring_of(tuple(_keys()))


def _keys() -> list:
    keys = getattr(settings, "STEADY_QUEUE_ENCRYPTION_KEYS", None)
    if not keys or isinstance(keys, str | bytes):
        raise ImproperlyConfigured(
            "An encrypted task needs STEADY_QUEUE_ENCRYPTION_KEYS: a list of Fernet keys."
        )
    return list(keys)


@functools.lru_cache(maxsize=8)
def _ring_of(keys: tuple):
    # Cached by the keys themselves: a changed setting (a test, a reload) builds a new ring.
    from cryptography.fernet import Fernet, MultiFernet

    return MultiFernet([Fernet(key) for key in keys])


def _invalid_token():
    from cryptography.fernet import InvalidToken

    return InvalidToken


def _setting_tasks() -> list[str] | tuple[()]:
    # Read each time (an enqueue's cost: one attribute): tests and reloads change it.
    return getattr(settings, "STEADY_QUEUE_ENCRYPT_TASKS", None) or ()
