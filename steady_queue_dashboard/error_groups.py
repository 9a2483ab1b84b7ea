"""Failed jobs grouped by error: exception class plus the message with its variable parts removed.

"Card 4242 declined for order 'A-17'" and "Card 1881 declined for order 'B-2'" are one
problem; grouping by the raw message would list each failure on its own.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime

from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import FailedExecution

from . import masking

# Groups are built from the latest failures only: one indexed read, whatever the backlog.
SCAN_LIMIT = 2_000
MESSAGE_LENGTH = 300

_REPLACEMENTS = [
    (re.compile(r"'[^']*'|\"[^\"]*\""), "'…'"),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<uuid>",
    ),
    (
        re.compile(r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I),
        "<hex>",
    ),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]


def normalise(message: str) -> str:
    """Replace quoted strings, UUIDs, hex ids and numbers with placeholders."""
    message = masking.shown(message)  # an encrypted task's errors: one group per class
    lines = (message or "").strip().splitlines()
    text = lines[0] if lines else ""
    for pattern, placeholder in _REPLACEMENTS:
        text = pattern.sub(placeholder, text)
    return text[:MESSAGE_LENGTH]


def signature(exception_class: str, message: str) -> str:
    """A short stable id of a group, for its URL."""
    text = f"{exception_class}\n{normalise(message)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class ErrorGroup:
    signature: str
    exception_class: str
    message: str
    first_seen: datetime
    last_seen: datetime
    job_ids: list[int] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.job_ids)


@dataclass(frozen=True)
class Groups:
    groups: list[ErrorGroup]
    # True when older failures exist beyond SCAN_LIMIT and are not in any group.
    partial: bool

    def find(self, key: str) -> ErrorGroup | None:
        return next((group for group in self.groups if group.signature == key), None)


def error_groups(limit: int = SCAN_LIMIT) -> Groups:
    """Group the latest ``limit`` failures, largest group first, in one query."""
    rows = list(
        _errors()
        .order_by("-created_at", "job_id")
        .values_list("job_id", "exception_class", "message", "created_at")[: limit + 1]
    )
    groups: dict[str, ErrorGroup] = {}
    for job_id, exception_class, message, created_at in rows[:limit]:
        key = signature(exception_class, message)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ErrorGroup(
                key, exception_class, normalise(message), created_at, created_at
            )
        group.job_ids.append(job_id)
        group.first_seen = min(group.first_seen, created_at)
        group.last_seen = max(group.last_seen, created_at)
    ordered = sorted(groups.values(), key=lambda g: (-g.count, -g.last_seen.timestamp()))
    return Groups(ordered, partial=len(rows) > limit)


def members(key: str, job_ids: list[int]) -> tuple[list[int], str]:
    """Return those of ``job_ids`` still failed with an error of group ``key``, and the error."""
    rows = _errors().filter(job_id__in=job_ids).values_list("job_id", "exception_class", "message")
    found = [
        (job_id, cls, message) for job_id, cls, message in rows if signature(cls, message) == key
    ]
    label = f"{found[0][1]}: {normalise(found[0][2])}" if found else ""
    return sorted(job_id for job_id, _cls, _message in found), label


def _errors():
    # A cancellation is an operator's decision, not an error to group, retry or alert on.
    return FailedExecution.objects.exclude(exception_class=CANCELLED_CLASS)
