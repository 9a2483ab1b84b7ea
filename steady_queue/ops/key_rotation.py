"""``manage.py steady_queue_rotate_keys``: everything sealed, sealed again with the newest key.

After a new key is put first in ``STEADY_QUEUE_ENCRYPTION_KEYS``, new data is sealed with
it at once, and the old data still opens with the old keys. This re-seals the old data
so that the old keys can be removed: the tables of ``SEALED``, in batches of at most
``batch_size`` rows by primary key, each batch one short transaction whose rows are
locked while they are rewritten (a worker finishing one of them waits for the batch).
Values sealed with the newest key already are left alone: running it again is cheap,
and reports what a race with a finishing run left (run it until it reports none).
A value no key opens is counted as unreadable and left as it is.

Another table that keeps sealed values adds itself with ``register``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q

from .. import db, encryption
from ..exceptions import EncryptionKeyMissing
from ..models import FailedExecution, Job, JobLogLine, WorkflowStep


@dataclasses.dataclass(frozen=True)
class Sealed:
    """A table's columns that may hold sealed values (JSON or text, nested in lists and
    objects), and a filter of the rows that may hold some."""

    model: type
    fields: tuple[str, ...]
    rows: Q


@dataclasses.dataclass
class Counts:
    """What the rotation did in one table."""

    rotated: int = 0
    current: int = 0
    unreadable: int = 0


def _sealed_json(field: str) -> Q:
    return Q(**{f"{field}__has_key": encryption.SEALED_KEY})


def _sealed_text(field: str) -> Q:
    return Q(**{f"{field}__startswith": encryption.TEXT_PREFIX})


#: The tables holding sealed values, in the order they are rotated.
SEALED: list[Sealed] = [
    Sealed(
        Job,
        ("arguments", "return_value", "metadata", "progress", "attempts"),
        _sealed_json("arguments") | _sealed_json("return_value") | _sealed_json("metadata"),
    ),
    Sealed(FailedExecution, ("message", "backtrace"), _sealed_text("message")),
    Sealed(JobLogLine, ("message",), _sealed_text("message")),
    Sealed(WorkflowStep, ("return_value",), _sealed_json("return_value")),
]


def register(model: type, fields: tuple[str, ...], rows: Q) -> None:
    """Rotate the sealed values of ``fields`` of ``model`` too (an archive's table)."""
    SEALED.append(Sealed(model, fields, rows))


def rotate(
    *, batch_size: int = 500, dry_run: bool = False, report: Callable[[str], None] = print
) -> dict[str, Counts]:
    """Seal every sealed value again with the newest key; one progress line per batch."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1.")
    if problems := encryption.key_problems():
        raise ImproperlyConfigured("; ".join(problems))
    return {
        table.model._meta.db_table: _rotate_table(table, batch_size, dry_run, report)
        for table in SEALED
    }


def _rotate_table(table: Sealed, batch_size: int, dry_run: bool, report) -> Counts:
    counts, after = Counts(), None
    name = table.model._meta.db_table
    while True:
        with db.atomic():
            rows = _batch(table, after, batch_size, locked=not dry_run)
            for pk, *values in rows:
                _rotate_row(table, pk, values, counts, dry_run)
        if not rows:
            return counts
        after = rows[-1][0]
        verb = "would re-encrypt" if dry_run else "re-encrypted"
        report(
            f"{name}: {verb} {counts.rotated}, current {counts.current}, "
            f"unreadable {counts.unreadable} (up to id {after})"
        )


def _batch(table: Sealed, after: Any, size: int, *, locked: bool) -> list[tuple]:
    rows = table.model.objects.filter(table.rows)
    if after is not None:
        rows = rows.filter(pk__gt=after)
    if locked:
        rows = rows.locked(skip_locked=False)
    return list(rows.order_by("pk").values_list("pk", *table.fields)[:size])


def _rotate_row(table: Sealed, pk: Any, values: list, counts: Counts, dry_run: bool) -> None:
    try:
        fresh = {f: _rotated(v) for f, v in zip(table.fields, values, strict=True)}
    except EncryptionKeyMissing:
        counts.unreadable += 1
        return
    changed = {f: v for (f, v), old in zip(fresh.items(), values, strict=True) if v != old}
    if not changed:
        counts.current += 1
        return
    counts.rotated += 1
    if not dry_run:
        table.model.objects.filter(pk=pk).update(**changed)


def _rotated(value: Any) -> Any:
    """``value`` with each sealed part sealed with the newest key (the same if all are)."""
    if encryption.is_sealed(value):
        return value if encryption.is_current(value) else encryption.rotated(value)
    if isinstance(value, list):
        return [_rotated(item) for item in value]
    if isinstance(value, dict):
        return {key: _rotated(item) for key, item in value.items()}
    return value
