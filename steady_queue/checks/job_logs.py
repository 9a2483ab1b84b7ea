"""The settings of a running job's log (``steady_queue.job_log_*``), checked at start."""

from __future__ import annotations

from datetime import timedelta

from django.core import checks

import steady_queue

ERROR_ID = "steady_queue.E311"


def check_job_log_settings(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """One error per ``job_log_*`` setting of the wrong kind (see docs/reference/job-logs.md)."""
    return [
        checks.Error(f"steady_queue.{name} {problem}", id=ERROR_ID) for name, problem in _problems()
    ]


def _problems() -> list[tuple[str, str]]:
    found = []
    level = steady_queue.job_log_level
    if level is not None and not _count(level, minimum=0):
        found.append(("job_log_level", f"is {level!r}: a logging level (an int) or None."))
    if not isinstance(steady_queue.job_log_print, bool):
        found.append(("job_log_print", f"is {steady_queue.job_log_print!r}: True or False."))
    for name in ("job_log_max_lines", "job_log_max_bytes"):
        value = getattr(steady_queue, name)
        if not _count(value, minimum=1):
            found.append((name, f"is {value!r}: a whole number of at least 1."))
    interval = steady_queue.job_log_flush_interval
    seconds = interval.total_seconds() if isinstance(interval, timedelta) else interval
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        found.append(("job_log_flush_interval", f"is {interval!r}: a positive timedelta."))
    return found


def _count(value, *, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum
