"""Finding jobs by their labels, and a running job's metadata.

``Job.objects.labelled(all=[...], any=[...])`` narrows any queryset of jobs through the
label index (``JobLabel``): one semi-join per label of ``all`` and one for ``any``,
each a range of the index's primary key ``(label, job_id)``.

``Job.merge_metadata`` is what ``steady_queue.context.set_metadata`` writes with: the
job's row locked, the new keys merged in, the size checked, in one short transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import models

from ... import db, metadata
from ...labels import checked
from ..base import QueueQuerySet


class LabelledQuerySet(QueueQuerySet):
    def labelled(
        self,
        *,
        all: Iterable[str] = (),
        any: Iterable[str] = (),  # shadows the builtin: the API's words
    ) -> LabelledQuerySet:
        """Jobs carrying every label of ``all`` and at least one label of ``any``.

        Either may be left out (``any=[]`` adds no condition); both given, both hold.
        Composes with every other filter. A label that is not a non-empty string of at
        most 100 characters raises ``InvalidLabels``.
        """
        from ..label import JobLabel

        if isinstance(all, str) or isinstance(any, str):
            raise TypeError("labelled(all=..., any=...) takes a list of labels, not a string.")
        every, some = checked(all), checked_any(any)
        narrowed = self
        for label in every:
            narrowed = narrowed.filter(pk__in=JobLabel.objects.filter(label=label).values("job_id"))
        if some:
            narrowed = narrowed.filter(
                pk__in=JobLabel.objects.filter(label__in=some).values("job_id")
            )
        return narrowed


def checked_any(labels: Iterable[str]) -> tuple[str, ...]:
    """The labels of ``any``: each checked, as many as asked (a filter, not a job's list)."""
    labels = list(labels)
    return tuple(dict.fromkeys(label for chunk in _chunks(labels) for label in checked(chunk)))


def _chunks(labels: list[str]) -> Iterable[list[str]]:
    # checked() counts a job's labels; a filter's ``any`` may name more than a job has.
    for start in range(0, len(labels), 20):
        yield labels[start : start + 20]


class Annotated(models.Model):
    """A job's metadata, written while it runs (``steady_queue.context.set_metadata``)."""

    class Meta:
        abstract = True

    @classmethod
    def merge_metadata(cls, job_id: int, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into the job's metadata (key by key) and return the whole.

        Refused with ``InvalidMetadata`` (nothing written) when a value is not JSON or
        the whole would pass ``metadata.MAX_BYTES``. The row is locked while it is read
        and written: two merges at once both land.
        """
        values = metadata.checked_values(values)
        with db.atomic():
            current = (
                cls.objects.filter(pk=job_id)
                .locked(skip_locked=False)
                .values_list("metadata", flat=True)
                .first()
            )
            if current is None:
                raise cls.DoesNotExist(f"Job {job_id} does not exist.")
            merged = metadata.checked_whole({**(current or {}), **values})
            cls.objects.filter(pk=job_id).update(metadata=merged)
        return merged
