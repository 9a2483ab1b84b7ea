"""The rules of a job's metadata (``Job.metadata``): a JSON object of at most 64 KB.

A running task writes it with ``steady_queue.context.set_metadata(context, **values)``;
the keys given replace those of the same name, the others stay. Of the foundation: it
imports no model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .exceptions import InvalidMetadata

#: The most a job's metadata may take, serialized as compact JSON (UTF-8 bytes).
MAX_BYTES = 64 * 1024


def checked_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as plain JSON (what the database gives back), or ``InvalidMetadata``.

    Round-tripped through ``json``: a tuple becomes a list, and what is not JSON (a
    datetime, a set, a model) is refused here rather than half-stored.
    """
    try:
        return json.loads(_dumped(dict(values)))
    except (TypeError, ValueError) as exc:
        raise InvalidMetadata(f"Job metadata must be JSON: {exc}") from exc


def checked_whole(whole: dict[str, Any]) -> dict[str, Any]:
    """``whole`` if it fits in ``MAX_BYTES``; else ``InvalidMetadata``."""
    size = len(_dumped(whole).encode())
    if size > MAX_BYTES:
        raise InvalidMetadata(
            f"Job metadata is at most {MAX_BYTES} bytes as JSON; this would be {size}."
        )
    return whole


def _dumped(value: Any) -> str:
    # allow_nan=False: NaN and Infinity are not JSON, and PostgreSQL's jsonb refuses them.
    return json.dumps(value, separators=(",", ":"), allow_nan=False)
