"""The dashboard's settings: ``settings.STEADY_QUEUE_DASHBOARD``, a dict, every key optional."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    # Argument and return-value keys containing one of these (any case) are masked.
    "MASK_PATTERNS": (
        "password",
        "passwd",
        "secret",
        "token",
        "key",
        "authorization",
        "cookie",
        "credential",
        "signature",
        "private",
    ),
    # Task path -> parameter names masked for that task only (also positional).
    "MASKED_ARGUMENTS": {},
    # A queue whose oldest ready job waited longer than this is reported as slow.
    "LATENCY_THRESHOLD": timedelta(minutes=5),
    # Failures in the last FAILURE_SPIKE_WINDOW compared with the same length of time,
    # on average, over the FAILURE_SPIKE_BASELINE before it.
    "FAILURE_SPIKE_WINDOW": timedelta(minutes=10),
    "FAILURE_SPIKE_BASELINE": timedelta(hours=1),
    "FAILURE_SPIKE_FACTOR": 3,
    "FAILURE_SPIKE_MINIMUM": 5,
    # A database alias (a read replica of the queue database) that pages read from;
    # actions always write to the queue database. None: pages read the queue database.
    "READ_DATABASE": None,
    # Dotted paths of tasks that "New job" offers besides those seen in the jobs table and
    # the recurring schedule (a task never enqueued yet, for instance).
    "TASKS": (),
    # Where the "Log out" button posts; None tries the URL names "logout" and "admin:logout".
    "LOGOUT_URL": None,
}


def setting(name: str) -> Any:
    """Return the dashboard setting ``name``, or its default."""
    configured = getattr(settings, "STEADY_QUEUE_DASHBOARD", None) or {}
    value = configured.get(name, DEFAULTS[name])
    if isinstance(DEFAULTS[name], timedelta) and isinstance(value, int | float):
        return timedelta(seconds=value)
    return value
