"""Keyset pagination: pages continue after the last row seen, never with OFFSET.

A cursor holds the ordering values of one row. "After" a cursor means the rows
that come later in the ordering; every ordering ends with a unique column (the
job id), so the order is total and no row is skipped or repeated between pages.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models import FloatField, Model, Q, QuerySet

# The URL parameters holding cursors: named apart from every filter (a date filter is
# called "after"), so that paging never reads as filtering, and a form that carries a
# list's filters carries no cursor.
PAGE_AFTER = "page_after"
PAGE_BEFORE = "page_before"
PAGE_PARAMS = (PAGE_AFTER, PAGE_BEFORE)


@dataclass(frozen=True)
class Page:
    rows: list[Model]
    next_cursor: str | None = None
    previous_cursor: str | None = None
    # Set when a bounded search stopped before filling the page: continue from here.
    search_cursor: str | None = None


class Keyset:
    """Pages through ``queryset`` in ``ordering`` (Django order_by terms)."""

    def __init__(self, queryset: QuerySet, ordering: Sequence[str], size: int = 50):
        self.queryset = queryset
        self.ordering = tuple(ordering)
        self.size = size

    def page(self, *, after: str | None = None, before: str | None = None) -> Page:
        """Return the page after (or before) a cursor; an unreadable cursor means the start."""
        if before and (values := self.decode(before)) is not None:
            return self._page_before(values)
        values = self.decode(after) if after else None
        rows = list(self._from(values)[: self.size + 1])
        return Page(
            rows=rows[: self.size],
            next_cursor=self.cursor_for(rows[self.size - 1]) if len(rows) > self.size else None,
            previous_cursor=self.cursor_for(rows[0]) if values is not None and rows else None,
        )

    def window_end(self, after: str | None, length: int) -> str | None:
        """Return the cursor of the ``length``-th row after ``after``, if there are that many.

        This bounds a scan (the argument search's window) rather than paginating, so one
        OFFSET over an index is the cheapest way to find where the window ends.
        """
        values = self.decode(after) if after else None
        fields = [term.lstrip("-") for term in self.ordering]
        ends = list(self._from(values).values_list(*fields)[length - 1 : length])
        return self.encode(ends[0]) if ends else None

    def window(self, after: str | None, length: int) -> tuple[list[Any], str | None]:
        """Like ``window_end``, and also return the primary keys of the window's rows.

        For orderings on a joined table: given a range of that table's ordering and a
        rare argument, PostgreSQL may walk the whole jobs table by its primary key to
        find the argument, where the window's keys make it look up those rows only.
        """
        values = self.decode(after) if after else None
        fields = [term.lstrip("-") for term in self.ordering]
        rows = list(self._from(values).values_list("pk", *fields)[:length])
        end = self.encode(rows[-1][1:]) if len(rows) == length else None
        return [row[0] for row in rows], end

    def up_to(self, cursor: str) -> Q:
        """Match the rows that come at or before ``cursor`` in the ordering."""
        values = self.decode(cursor)
        if values is None:
            return Q()
        return _beyond(_reversed(self.ordering), values) | Q(
            **{term.lstrip("-"): value for term, value in zip(self.ordering, values, strict=True)}
        )

    def cursor_for(self, row: Model) -> str:
        return self.encode([_value(row, term.lstrip("-")) for term in self.ordering])

    def encode(self, values: Sequence[Any]) -> str:
        raw = json.dumps(list(values), default=_exact).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def decode(self, cursor: str) -> list[Any] | None:
        """Return the cursor's values, or None when it was not made for this ordering.

        Cursors come from URLs, so anyone can write one: a value of the wrong type, a
        null, a number the column cannot hold or a naive time is refused here rather
        than reaching the database.
        """
        try:
            raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
            values = json.loads(raw, parse_constant=_refuse)
            if not isinstance(values, list) or len(values) != len(self.ordering):
                return None
            pairs = zip(self.ordering, values, strict=True)
            return [self._to_python(term, value) for term, value in pairs]
        except (
            binascii.Error,
            ValueError,
            TypeError,
            OverflowError,
            UnicodeError,
            ValidationError,
            FieldDoesNotExist,
        ):
            return None

    def _page_before(self, values: list[Any]) -> Page:
        backwards = _reversed(self.ordering)
        rows = list(
            self.queryset.filter(_beyond(backwards, values)).order_by(*backwards)[: self.size + 1]
        )
        has_more = len(rows) > self.size
        rows = rows[: self.size][::-1]
        return Page(
            rows=rows,
            next_cursor=self.cursor_for(rows[-1]) if rows else None,
            previous_cursor=self.cursor_for(rows[0]) if has_more else None,
        )

    def _from(self, values: list[Any] | None) -> QuerySet:
        queryset = self.queryset.order_by(*self.ordering)
        return queryset if values is None else queryset.filter(_beyond(self.ordering, values))

    def _to_python(self, term: str, value: Any) -> Any:
        # Floats: a ready job's fair_order (finite: json refuses NaN and Infinity above).
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ValidationError("A cursor holds strings and numbers only.")
        field = _field(self.queryset.model, term.lstrip("-"))
        if isinstance(value, float) and not isinstance(field, FloatField):
            raise ValidationError("Only a float column's cursor value is a float.")
        python = field.to_python(value)
        if python is None:
            raise ValidationError("A cursor holds no nulls.")
        if isinstance(python, datetime) and settings.USE_TZ:
            if python.tzinfo is None:
                raise ValidationError("A cursor's times carry their offset.")
            python = python.astimezone(UTC)  # Overflows here, not in the database driver.
        # The column's own range checks (e.g. 64-bit integers) before the database sees it.
        (field.target_field if field.is_relation else field).run_validators(python)
        return python


def _beyond(ordering: Sequence[str], values: Sequence[Any]) -> Q:
    """Rows strictly after ``values`` in ``ordering``.

    The redundant bound on the first column lets the database range-scan its index
    instead of evaluating the OR for every row.
    """
    first = ordering[0]
    condition = Q(**{_lookup(first, inclusive=True): values[0]})
    alternatives = Q()
    for position, term in enumerate(ordering):
        equal = {t.lstrip("-"): v for t, v in zip(ordering, values[:position], strict=False)}
        alternatives |= Q(**equal, **{_lookup(term): values[position]})
    return condition & alternatives


def _lookup(term: str, *, inclusive: bool = False) -> str:
    direction = "lt" if term.startswith("-") else "gt"
    return f"{term.lstrip('-')}__{direction}{'e' if inclusive else ''}"


def _reversed(ordering: Sequence[str]) -> tuple[str, ...]:
    return tuple(term[1:] if term.startswith("-") else f"-{term}" for term in ordering)


def _field(model: type[Model], path: str):
    if path == "pk":
        return model._meta.pk
    *relations, name = path.split("__")
    for relation in relations:
        model = model._meta.get_field(relation).related_model
    return model._meta.get_field(name)


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not a cursor value.")


def _exact(value: Any) -> str:
    # Not DjangoJSONEncoder: it rounds datetimes to milliseconds, and cursors must be exact.
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"Cannot put {type(value).__name__} in a cursor.")


def _value(row: Model, path: str) -> Any:
    value: Any = row
    for part in path.split("__"):
        value = getattr(value, part)
    return value
