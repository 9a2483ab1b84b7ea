"""Names for hand-written SQL on the queue database, taken from the models' metadata."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from django.db.models import Field

from .. import db
from ..models import ReadyExecution
from ..models.execution import POLL_ORDER
from ..models.queue_selector import QueueSelector


def table(model) -> str:
    """The model's table name, quoted for the queue database."""
    return db.connection().ops.quote_name(model._meta.db_table)


def columns(fields: Sequence[Field], prefix: str = "") -> str:
    """The fields' column names, quoted, comma-separated."""
    quote = db.connection().ops.quote_name
    return ", ".join(f"{prefix}{quote(field.column)}" for field in fields)


@functools.cache
def poll_order() -> str:
    """POLL_ORDER as SQL: the columns of ReadyExecution's poll indexes, in their order."""
    terms = []
    for name in POLL_ORDER:
        column = ReadyExecution._meta.get_field(name.lstrip("-")).column
        terms.append(f"{column} DESC" if name.startswith("-") else column)
    return ", ".join(terms)


def claim_per_queue(
    queues: Sequence[str], limit: int, claim_from: Callable[[str | None, int], tuple[list, bool]]
) -> list:
    """Claim as the portable claim does, ``claim_from(queue, limit)`` claiming from one queue.

    ``claim_from(None, limit)`` claims from every queue in one go, while none is paused,
    and says whether one is: (claimed, paused). A poll of ``*`` tries that first. Then
    wildcards, or ``*`` with paused queues, take the selector's DISTINCT over the ready
    queues, and the queues are claimed from in order until ``limit`` is reached.
    """
    queues = list(queues) or ["*"]
    if "*" in queues:
        claimed, paused = claim_from(None, limit)
        if not paused:
            return claimed  # one statement read every queue
    if "*" in queues or any("*" in entry for entry in queues):
        names = QueueSelector(queues, ReadyExecution.objects.all()).scoped_queues()
    else:
        names = list(dict.fromkeys(queues))
    claimed = []
    for name in names:
        if name is None or len(claimed) >= limit:
            break  # None: the pauses are gone, and the queues were empty
        claimed += claim_from(name, limit - len(claimed))[0]
    return claimed
