"""Whether an SQLite database was written, told by its files: no query, two stat() calls.

SQLite has no NOTIFY, but every commit leaves a trace in the files: in WAL mode the
``<db>-wal`` file grows or, after a checkpoint, is rewritten from its start; in
rollback-journal mode the database file itself is written. A process that wants to
know whether another one wrote compares their identity, size and modification time
with what it saw last.

Only stat(), never open(): closing any descriptor of a file releases every POSIX lock
this process holds on it, the locks of its own SQLite connections included, and
SQLite's files would be corrupted (https://sqlite.org/howtocorrupt.html, 2.2).

The kernel stamps files from a clock that may be coarse (a few milliseconds; Linux 6.13
and later give a file written after a stat() a fine-grained time). There, two commits
in one tick, with a look in between, into a WAL file that does not grow, leave the same
size and time: the second goes unseen until the next write. Whoever relies on these
files polls now and then all the same (``processes.pacing.Signalled``).
"""

from __future__ import annotations

import os
from pathlib import Path


class DatabaseFiles:
    """The files of the SQLite database at ``path``; ``changed()`` compares their state."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._files = (self.path, Path(f"{path}-wal"))
        self._last = self.fingerprint()

    def changed(self) -> bool:
        """Whether the database was written since the last call (or since creation)."""
        now = self.fingerprint()
        if now == self._last:
            return False
        self._last = now
        return True

    def fingerprint(self) -> tuple:
        """Identity, size and modification time of the database file and of its WAL."""
        return tuple(_stat(path) for path in self._files)


def for_database(settings: dict) -> DatabaseFiles | None:
    """The files of an SQLite database from its Django settings; None if in memory."""
    name = str(settings.get("NAME") or "")
    in_memory = not name or name == ":memory:" or "mode=memory" in name
    if in_memory or name.startswith("file:") or not Path(name).exists():
        return None
    return DatabaseFiles(name)


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        found = path.stat()
    except FileNotFoundError:
        return None  # no WAL yet, or the last connection removed it
    return (found.st_ino, found.st_size, found.st_mtime_ns)
