"""Hide secrets in arguments and return values before the dashboard shows them.

A value is masked when its key (a keyword argument's name, or a key of a dict at
any depth) contains one of ``STEADY_QUEUE_DASHBOARD["MASK_PATTERNS"]``, or when it
is a parameter a task masks for itself: ``@masked_arguments("card_number")`` above
``@task()``, or ``STEADY_QUEUE_DASHBOARD["MASKED_ARGUMENTS"]`` by task path.

An encrypted task's stored values (``steady_queue.encryption``) are shown as
``ENCRYPTED`` through ``shown``, the one door every page (and the archive) goes
through; only ``revealed``, for a user with the reveal permission, opens them.
"""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from steady_queue import encryption

from .conf import setting

MASK = "[masked]"
#: What the console shows in place of an encrypted task's value.
ENCRYPTED = encryption.ENCRYPTED
#: What a revealed value shows when no key of the ring opens it.
UNREADABLE = "encrypted (no key of STEADY_QUEUE_ENCRYPTION_KEYS opens it)"

# Task path -> (masked parameter names, positions of those parameters).
_REGISTERED: dict[str, tuple[frozenset[str], frozenset[int]]] = {}


def masked_arguments(*names: str):
    """Mask the parameters ``names`` of the decorated task in the dashboard."""

    def register(task):
        func = getattr(task, "func", task)
        path = getattr(task, "module_path", f"{func.__module__}.{func.__qualname__}")
        _REGISTERED[path] = (frozenset(names), frozenset(_positions(task, names)))
        _task_masks.cache_clear()
        return task

    return register


def is_encrypted(value: Any) -> bool:
    """Whether a stored value (JSON or text) is an encrypted task's, sealed."""
    return encryption.is_sealed(value)


def shown(value: Any) -> Any:
    """What the console shows of a stored value: ``ENCRYPTED`` for a sealed one, else it."""
    return ENCRYPTED if encryption.is_sealed(value) else value


def revealed(value: Any) -> Any:
    """A stored value opened, for a user allowed to reveal it (``UNREADABLE`` without a key).

    The caller audits the reveal (``views/reveal.py``); everything else uses ``shown``.
    """
    try:
        if isinstance(value, str):
            return encryption.opened_text(value)
        return encryption.opened(value)
    except encryption.EncryptionKeyMissing:
        return UNREADABLE


def is_masked_key(key: str, task_path: str | None = None) -> bool:
    """Return whether a value stored under ``key`` is hidden (for ``task_path``, if given)."""
    lowered = key.lower()
    if any(pattern.lower() in lowered for pattern in setting("MASK_PATTERNS")):
        return True
    return task_path is not None and key in _task_masks(task_path)[0]


def mask_search(text: str) -> str:
    """Hide the value of an argument search on a masked keyword ("password=[masked]")."""
    name, sep, _value = text.partition("=")
    if sep and name.strip().isidentifier() and is_masked_key(name.strip()):
        return f"{name.strip()}={MASK}"
    return text


def mask(value: Any) -> Any:
    """Return ``value`` with every dict entry under a masked key replaced by MASK."""
    if isinstance(value, dict):
        return {k: MASK if is_masked_key(str(k)) else mask(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask(item) for item in value]
    return value


def mask_metadata(value: Any, task_path: str | None) -> Any:
    """Mask a job's metadata as its arguments are: under a key matching ``MASK_PATTERNS``,
    or named as one of its task's masked parameters, at any depth."""
    if isinstance(value, dict):
        return {
            k: MASK if is_masked_key(str(k), task_path) else mask_metadata(v, task_path)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_metadata(item, task_path) for item in value]
    return value


def mask_call(args: list, kwargs: dict, task_path: str | None) -> tuple[list, dict]:
    """Mask a call's displayed arguments: masked keywords, the task's masked positions."""
    positions = _task_masks(task_path)[1] if task_path else frozenset()
    shown_args = [MASK if i in positions else mask(v) for i, v in enumerate(args)]
    shown_kwargs = {
        name: MASK if is_masked_key(name, task_path) else mask(value)
        for name, value in kwargs.items()
    }
    return shown_args, shown_kwargs


def tasks_masking_positions() -> list[str]:
    """Task paths with masked positional parameters: a bare-value search skips their jobs."""
    return sorted(path for path, (_names, positions) in _all_masks().items() if positions)


def tasks_masking_names(name: str) -> list[str]:
    """Task paths that mask the keyword ``name``: a keyword search skips their jobs."""
    return sorted(path for path, (names, _positions) in _all_masks().items() if name in names)


def _all_masks() -> dict[str, tuple[frozenset[str], frozenset[int]]]:
    paths = set(_REGISTERED) | set(setting("MASKED_ARGUMENTS"))
    return {path: _task_masks(path) for path in paths}


@cache
def _task_masks(task_path: str) -> tuple[frozenset[str], frozenset[int]]:
    configured = frozenset(setting("MASKED_ARGUMENTS").get(task_path, ()))
    if task_path not in _REGISTERED:
        # Importing the task's module runs its @masked_arguments; a task that cannot be
        # imported here still has its configured and pattern-matched names masked.
        try:
            target = import_string(task_path)
        except Exception:  # a module that fails to import must not break a page
            target = None
        if configured and target is not None and task_path not in _REGISTERED:
            return configured, frozenset(_positions(target, configured))
    names, positions = _REGISTERED.get(task_path, (frozenset(), frozenset()))
    return names | configured, positions


def _positions(task, names) -> list[int]:
    """Return the positions of the parameters ``names`` in a task's call (no context)."""
    try:
        parameters = list(inspect.signature(getattr(task, "func", task)).parameters)
    except (TypeError, ValueError):
        return []
    if getattr(task, "takes_context", False) and parameters:
        parameters = parameters[1:]
    return [index for index, name in enumerate(parameters) if name in names]


@receiver(setting_changed)
def _forget_masks(**kwargs) -> None:
    if kwargs["setting"] == "STEADY_QUEUE_DASHBOARD":
        _task_masks.cache_clear()
