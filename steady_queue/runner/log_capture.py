"""The capture of a running job's log lines: a root-logger handler and a print tee.

``install`` (a worker's boot) puts them in place as the settings say; each adds a
record, or a printed line, to the current run's buffer (``run_logs.current()``), and
does nothing outside a run.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from typing import Any

import steady_queue

from .run_logs import current


class _Handler(logging.Handler):
    """Add each record emitted during a run to the run's buffer."""

    def __init__(self, level: int):
        super().__init__(level)
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        run = current()
        if run is None:
            return
        try:
            run.add(record.levelno, record.name, self.format(record))
        except Exception:
            self.handleError(record)


class _PrintTee:
    """A stream that writes through, and adds what a run prints to the run's buffer."""

    def __init__(self, stream: Any, name: str):
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        run = current()
        if run is not None and text:
            run.printed(self._name, text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@dataclasses.dataclass
class _Installed:
    handler: _Handler | None
    root_level: int
    lowered: list[logging.Handler]


_installed: _Installed | None = None


def install() -> None:
    """Capture the running jobs' records and prints, as the settings say.

    The root logger must let records of the capture level through: if its level is
    higher, it is lowered, and the root's handlers without a level are given its old
    level, so that they show what they showed before.
    """
    global _installed
    if _installed is not None:
        return
    level, root = steady_queue.job_log_level, logging.getLogger()
    handler, lowered, root_level = None, [], root.level
    if level is not None:
        handler = _Handler(level)
        if root.getEffectiveLevel() > level:
            lowered = [h for h in root.handlers if h.level == logging.NOTSET]
            for each in lowered:
                each.setLevel(root_level)
            root.setLevel(level)
        root.addHandler(handler)
    if steady_queue.job_log_print:
        sys.stdout = _PrintTee(sys.stdout, "stdout")
        sys.stderr = _PrintTee(sys.stderr, "stderr")
    _installed = _Installed(handler, root_level, lowered)


def uninstall() -> None:
    """Undo ``install`` (tests)."""
    global _installed
    if _installed is None:
        return
    root = logging.getLogger()
    if _installed.handler is not None:
        root.removeHandler(_installed.handler)
        root.setLevel(_installed.root_level)
        for each in _installed.lowered:
            each.setLevel(logging.NOTSET)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, _PrintTee):
            setattr(sys, name, stream._stream)
    _installed = None
