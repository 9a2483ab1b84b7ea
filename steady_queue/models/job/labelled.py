"""Finding jobs by their labels: ``Job.objects.labelled(all=[...], any=[...])``.

It narrows any queryset of jobs through the label index (``JobLabel``): one semi-join
per label of ``all`` and one for ``any``, each a range of the index's primary key
``(label, job_id)``. On PostgreSQL the planner merges the ranges of ``all`` backwards
(both are in id order), so the newest page of a filter reads a few index pages.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...task_options.labels import checked, each_checked
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
        Composes with every other filter; each job appears once. A label that is not a
        non-empty string of at most 100 characters raises ``InvalidLabels``, and so do
        more than 20 labels in ``all`` (no job carries that many); ``any`` may name any
        number. A string instead of a list raises ``TypeError``.
        """
        from ..label import JobLabel

        if isinstance(all, str) or isinstance(any, str):
            raise TypeError("labelled(all=..., any=...) takes a list of labels, not a string.")
        every, some = checked(all), each_checked(any)
        narrowed = self
        for label in every:
            narrowed = narrowed.filter(pk__in=JobLabel.objects.filter(label=label).values("job_id"))
        if some:
            narrowed = narrowed.filter(
                pk__in=JobLabel.objects.filter(label__in=some).values("job_id")
            )
        return narrowed
