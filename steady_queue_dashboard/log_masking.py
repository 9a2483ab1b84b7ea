"""Hide a job's secrets in the lines its task logged, before the dashboard shows them.

A task that logs a masked argument (``masking``: a masked parameter, a key matching
``MASK_PATTERNS``) would show it in its log: every occurrence of such a value in a
line is replaced by the mask, and so is the value after a masked name written as
``name=value`` or ``name: value``. Values shorter than ``SHORTEST_SECRET`` characters
are left alone (masking every "1" of a log hides nothing and garbles everything).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from steady_queue import arguments

from .conf import setting
from .masking import MASK, mask_call

SHORTEST_SECRET = 3


def log_masker(task_path: str, stored_arguments: dict) -> Callable[[str], str]:
    """A function that masks, in a line this job logged, what its arguments mask."""
    raw_args, raw_kwargs = arguments.display(stored_arguments or {})
    shown_args, shown_kwargs = mask_call(raw_args, raw_kwargs, task_path)
    secrets = set(_hidden(raw_args, shown_args)) | set(_hidden(raw_kwargs, shown_kwargs))
    secrets = sorted((s for s in secrets if len(s) >= SHORTEST_SECRET), key=len, reverse=True)
    names = [*setting("MASK_PATTERNS"), *_masked_names(raw_kwargs, shown_kwargs)]
    named = _named_value_pattern(names)

    def masked(line: str) -> str:
        for secret in secrets:
            line = line.replace(secret, MASK)
        return named.sub(lambda found: found.group(1) + MASK, line) if named else line

    return masked


def _hidden(raw: Any, shown: Any) -> Iterator[str]:
    """The scalar values of ``raw`` that ``shown`` (its masked copy) hides, as text."""
    if shown == MASK and raw != MASK:
        yield from _scalars(raw)
    elif isinstance(raw, dict) and isinstance(shown, dict):
        for key, value in raw.items():
            yield from _hidden(value, shown.get(key))
    elif isinstance(raw, list | tuple) and isinstance(shown, list | tuple):
        for value, masked in zip(raw, shown, strict=False):
            yield from _hidden(value, masked)


def _scalars(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _scalars(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _masked_names(raw: dict, shown: dict) -> list[str]:
    return [name for name, value in shown.items() if value == MASK and raw.get(name) != MASK]


def _named_value_pattern(names: list[str]) -> re.Pattern | None:
    """``<a name containing one of names><= or :><a value>``, the value to mask."""
    words = "|".join(re.escape(name) for name in names if name)
    if not words:
        return None
    # The value: quoted (spaces and all), or up to a space or a separator.
    return re.compile(
        rf"""([\w.-]*(?:{words})[\w.-]*["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s"',;&}}]+)""",
        re.IGNORECASE,
    )
