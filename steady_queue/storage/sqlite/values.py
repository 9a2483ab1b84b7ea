"""Jobs' rows as SQLite stores them, without the ORM's dispatch for every value.

``Field.get_db_prep_save`` goes through four or five calls per value (``pre_save``,
``get_prep_value``, ``to_python``, the backend's adapter, a settings lookup each): on
SQLite, which has no round trips, that is a third of a bulk enqueue's time, and more
than the two INSERTs of a single one. Here the common values are converted directly,
the same way Django's fields do: text and whole numbers as they are, aware datetimes
as naive UTC text, JSON dumped with the field's encoder, None as NULL. Anything else (a
naive datetime, a lazy string, an expression, a field of another kind) goes through
the field's own ``get_db_prep_save``. A field that sets its value on save
(``auto_now``) still does so, with its ``pre_save``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

if TYPE_CHECKING:
    from ...models import Job

# How each column's value is converted.
ORM, TEXT, NUMBER, MOMENT, JSON = range(5)

KINDS = {
    models.CharField: TEXT,
    models.TextField: TEXT,
    models.SmallIntegerField: NUMBER,
    models.IntegerField: NUMBER,
    models.BigIntegerField: NUMBER,
    models.ForeignKey: NUMBER,  # an id, as the target's primary key stores it
    models.DateTimeField: MOMENT,
    models.JSONField: JSON,
}


def job_rows(jobs: Sequence[Job], plan: tuple[tuple, ...], connection) -> list[list]:
    """Each job's values of the fields of ``plan`` (``plan_for(fields)``), as
    ``field.get_db_prep_save`` would give them."""
    utc = _utc(connection)
    rows = []
    for job in jobs:
        row = []
        for attname, kind, field, plain, sets_itself in plan:
            value = field.pre_save(job, True) if sets_itself else getattr(job, attname)
            if value is None or type(value) is plain:
                row.append(value)  # NULL, text as text, a whole number as a number
            elif kind == JSON and type(value) in (dict, list):
                row.append(json.dumps(value, cls=field.encoder))
            elif kind == MOMENT and type(value) is datetime and value.tzinfo and utc:
                row.append(str(value.astimezone(utc).replace(tzinfo=None)))
            else:
                row.append(field.get_db_prep_save(value, connection))
        rows.append(row)
    return rows


def moment(value: datetime, connection) -> str:
    """A moment (``timezone.now()``, or later) as a DateTimeField stores it."""
    utc = _utc(connection)
    if utc and value.tzinfo:
        return str(value.astimezone(utc).replace(tzinfo=None))
    return connection.ops.adapt_datetimefield_value(value)  # as the field would, or raise


def _utc(connection):
    """The zone SQLite's datetimes are kept in, naive (None: without time zone support)."""
    return connection.timezone if settings.USE_TZ else None


def plan_for(fields: Sequence[models.Field]) -> tuple[tuple, ...]:
    """Each field's attribute, its kind, the type stored as it is, and whether it sets its
    value on save. Exact classes only: a subclass may convert its own way. Build it once:
    a cache keyed by the fields would hash each of them on every call."""
    plan = []
    for field in fields:
        kind = KINDS.get(type(field), ORM)
        plain = {TEXT: str, NUMBER: int}.get(kind, type(None))  # NoneType: none as it is
        sets_itself = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        plan.append((field.attname, kind, field, plain, sets_itself))
    return tuple(plan)
