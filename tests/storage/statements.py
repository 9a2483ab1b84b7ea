"""What the statement-count tests of the storages compare."""

from __future__ import annotations

from django.test.utils import CaptureQueriesContext


def sent(queries: CaptureQueriesContext) -> list[str]:
    """Each statement's first words: enough to tell what it was."""
    return [" ".join(query["sql"].split()[:3]) for query in queries.captured_queries]
