"""Names for hand-written SQL on the queue database, taken from the models' metadata."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Field

from .. import db


def table(model) -> str:
    """The model's table name, quoted for the queue database."""
    return db.connection().ops.quote_name(model._meta.db_table)


def columns(fields: Sequence[Field], prefix: str = "") -> str:
    """The fields' column names, quoted, comma-separated."""
    quote = db.connection().ops.quote_name
    return ", ".join(f"{prefix}{quote(field.column)}" for field in fields)
