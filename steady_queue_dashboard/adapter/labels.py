"""Jobs' labels and metadata: the label filter's query, and metadata as the job page shows it."""

from __future__ import annotations

import json

from django.db.models import QuerySet

from steady_queue.models import Job

from .. import masking


def labelled(queryset: QuerySet, labels: list[str], mode: str) -> QuerySet:
    """Narrow ``queryset`` to the jobs holding all (``mode`` "all") or any of ``labels``.

    The engine's ``labelled`` query (served by its label index) composes with the list's
    other filters and its keyset order, and bulk actions re-apply it through the same filter.
    """
    return queryset.labelled(**{mode: labels})


def display_metadata(job: Job) -> str:
    """The job's metadata as indented JSON, masked as its arguments are; "" when it has none."""
    metadata = getattr(job, "metadata", None)
    if not metadata:
        return ""
    if masking.is_encrypted(metadata):
        return masking.ENCRYPTED
    shown = masking.mask_metadata(metadata, job.task_path)
    return json.dumps(shown, indent=2, sort_keys=True, default=str, ensure_ascii=False)
