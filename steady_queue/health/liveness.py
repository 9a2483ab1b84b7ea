"""A file whose modification time says the supervisor's loop is still turning.

``manage.py steady_queue --liveness-file PATH`` (or ``steady_queue.liveness_file``)
makes the supervisor touch PATH at every turn of its loop (about once a second),
whatever the database's state: restarting a process does not bring a database back,
so an outage must not fail the probe. A container orchestrator's liveness probe runs
``manage.py steady_queue_health --liveness PATH --max-age 60``: a supervisor stuck
anywhere stops touching the file, and the probe fails.

Only the supervisor touches it. A child touching the same file would keep it fresh
while the supervisor is stuck; children that die are replaced by the supervisor, and
children that stop sending heartbeats are pruned by it, which the health check reports.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta
from pathlib import Path

from .problems import Problem

logger = logging.getLogger("steady_queue.processes")


class LivenessFile:
    """The file at ``path`` (None: none is kept), touched by the supervisor's loop."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self._failing = False

    def touch(self) -> None:
        """Set the file's modification time to now, creating it; log a failure once."""
        if self.path is None:
            return
        try:
            self.path.touch()
        except OSError as exc:
            if not self._failing:
                logger.warning("Cannot touch the liveness file %s: %s", self.path, exc)
            self._failing = True
        else:
            self._failing = False

    def delete(self) -> None:
        """Remove the file: a stopped supervisor is not alive."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def age(self) -> timedelta | None:
        """How long ago the file was last touched; None when there is no file."""
        try:
            modified = self.path.stat().st_mtime
        except (OSError, AttributeError):
            return None
        return timedelta(seconds=max(time.time() - modified, 0))

    def problems(self, max_age: timedelta) -> list[Problem]:
        """A problem when the file is missing or older than ``max_age``; no database query."""
        age = self.age()
        if age is None:
            return [Problem("liveness_missing", f"The liveness file {self.path} does not exist.")]
        if age > max_age:
            return [
                Problem(
                    "liveness_stale",
                    f"The liveness file {self.path} was last touched {age.total_seconds():.0f}s "
                    f"ago (more than {max_age.total_seconds():.0f}s): the supervisor is stuck "
                    "or stopped.",
                )
            ]
        return []
