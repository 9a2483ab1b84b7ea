"""Per-task options declared by decorators, found again from a job's task path.

Each option has a module here: ``concurrency`` (``@limits_concurrency``), ``retries``
(``@retry_policy``), ``uniqueness`` (``@unique``), ``rate_limits`` (``@rate_limit``),
``timeouts`` (``@timeout``), ``recurring_task`` (``@recurring``), ``transactional``
(``@transactional``), ``labels`` (``@labels``, also a ``with`` block) and ``encryption``
(``@encrypted``, with the key ring that seals an encrypted task's data). This module
holds what they share: the registry of one kind of option, and how a key is stored. All
of them sit in the foundation: they import no model, storage, process or backend.
"""

from __future__ import annotations

import hashlib
from contextlib import suppress
from typing import Any

from django.db import models
from django.utils.module_loading import import_string

from ..compat import Task


class TaskOptions[T]:
    """A registry of one kind of option (a limit, a retry policy), keyed by task path.

    Decorators fill it when the task's module is imported. A dispatcher, a supervisor
    or a web process may look a job up before anything imported that module, so a
    miss imports the task once and looks again.
    """

    def __init__(self) -> None:
        self._options: dict[str, T] = {}
        self._imported: set[str] = set()

    def register(self, task: Task, option: T) -> None:
        self._options[task.module_path] = option

    def get(self, task_path: str) -> T | None:
        if task_path not in self._options and task_path not in self._imported:
            # Noted once imported, not before: a thread asking while another imports the
            # module waits on Python's import lock for it, instead of a miss.
            _import_task(task_path)
            self._imported.add(task_path)
        return self._options.get(task_path)

    def values(self) -> list[T]:
        return list(self._options.values())


def key_text(value: Any) -> str:
    """The text of what a key function returned (a concurrency, unique or rate limit key).

    A model instance keys by identity (its model and primary key), not by its
    changeable ``__str__``.
    """
    if isinstance(value, models.Model):
        return f"{value._meta.label_lower}:{value.pk}"
    return str(value)


#: What starts a key kept as the digest of a longer one; no key is kept verbatim with it.
DIGEST_PREFIX = "sha256:"


def stored_key(text: str, readable_length: int) -> str:
    """The key to store for ``text``: itself when short, else its digest.

    Digests have a namespace of their own: a key spelled like one (``sha256:…``) is
    digested too, so that a short key can never equal the digest of a long one. Keys
    stored before this rule keep their value unless they began with the prefix.
    """
    if len(text) <= readable_length and not text.startswith(DIGEST_PREFIX):
        return text
    return DIGEST_PREFIX + hashlib.sha256(text.encode()).hexdigest()


def _import_task(task_path: str) -> None:
    # A job of a task that no longer exists simply has no options.
    with suppress(ImportError):
        import_string(task_path)
