"""The supervisor's pidfile: one supervisor per pidfile, and a health check for others."""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger("steady_queue.processes")


class SupervisorAlreadyRunning(Exception):
    """Another live supervisor holds the pidfile."""


class Pidfile:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.pid = os.getpid()

    def setup(self) -> None:
        """Write our pid; refuse when a live supervisor wrote its own, replace a stale one."""
        self._remove_if_stale()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:  # another supervisor wrote it just now
            raise self._already_running(self._read()) from None
        with os.fdopen(fd, "w") as file:
            file.write(f"{self.pid}\n")

    def delete(self) -> None:
        """Remove the pidfile if it is still ours (a forked child never removes it)."""
        if os.getpid() == self.pid and self._read() == self.pid:
            self.path.unlink(missing_ok=True)

    def _remove_if_stale(self) -> None:
        if not self.path.exists():
            return
        existing = self._read()
        if existing is not None and existing != self.pid and _alive(existing):
            raise self._already_running(existing)
        logger.info("Removing the stale pidfile %s (pid %s is not running)", self.path, existing)
        self.path.unlink(missing_ok=True)

    def _read(self) -> int | None:
        try:
            return int(self.path.read_text().strip())
        except (OSError, ValueError):
            return None

    def _already_running(self, pid: int | None) -> SupervisorAlreadyRunning:
        return SupervisorAlreadyRunning(
            f"A Steady Queue supervisor is already running (pid {pid}): see {self.path}."
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True
