"""Jobs of ``@rate_limit`` tasks: their window, and the admission of their runs."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from ...task_options import rate_limits

if TYPE_CHECKING:
    from ..execution.outcomes import Throttle


class RateLimited:
    """A job's rate limit window (``Job.rate_limit_key``: empty when its task has none)."""

    @property
    def is_rate_limited(self) -> bool:
        return bool(self.rate_limit_key)

    @property
    def rate_limit(self) -> rate_limits.RateLimit | None:
        return rate_limits.rate_limit_for(self.task_path)

    @property
    def rate_limit_bucket_key(self) -> str:
        return rate_limits.bucket_key(self.task_path, self.rate_limit_key)

    def admit_run(self) -> datetime | None:
        """Count this run's start against its window (None), or say when there is room."""
        if not self.is_rate_limited:
            return None
        from ..rate_limit import admit_run

        return admit_run(self)

    def admit_or_throttle(self) -> Throttle | None:
        """Admit this run (None: its start counted against its window), or the outcome it
        ends with instead: ``Throttle``, to wait for room (not an attempt)."""
        from ..execution.outcomes import Throttle

        room_at = self.admit_run()
        return None if room_at is None else Throttle(room_at)
