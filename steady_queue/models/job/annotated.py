"""A job's metadata (``Job.metadata``): a JSON object of at most 64 KB, written by the
running task with ``steady_queue.context.set_metadata(context, **values)``.

The keys given replace those of the same name, the others stay. ``Job.merge_metadata``
writes them: the job's row locked, the new keys merged in, the size checked, in one
short transaction, so that two merges at once both land.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.db import models

from ... import db, encryption
from ...exceptions import InvalidMetadata

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


class Annotated(models.Model):
    """A job's metadata, written while it runs (``steady_queue.context.set_metadata``)."""

    class Meta:
        abstract = True

    @classmethod
    def merge_metadata(cls, job_id: int, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into the job's metadata (key by key) and return the whole.

        Refused with ``InvalidMetadata`` (nothing written) when a value is not JSON or
        the whole would pass ``MAX_BYTES``. The row is locked while it is read
        and written: two merges at once both land.
        """
        values = checked_values(values)
        with db.atomic():
            found = (
                cls.objects.filter(pk=job_id)
                .locked(skip_locked=False)
                .values_list("metadata", "task_path")
                .first()
            )
            if found is None:
                raise cls.DoesNotExist(f"Job {job_id} does not exist.")
            current, task_path = encryption.opened(found[0]), found[1]
            merged = checked_whole({**(current or {}), **values})
            # An encrypted task's metadata is stored sealed, whole (its size checked plain).
            sealed = encryption.is_encrypted(task_path)
            cls.objects.filter(pk=job_id).update(
                metadata=encryption.seal(merged) if sealed else merged
            )
        return merged
