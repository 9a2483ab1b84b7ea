"""One attempt at running a job, as stored in ``Job.attempts``, and errors made storable."""

from __future__ import annotations

import dataclasses
import traceback
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from .. import encryption

# FailedExecution.exception_class is a CharField(max_length=255).
CLASS_PATH_LENGTH = 255


@dataclasses.dataclass(frozen=True)
class Attempt:
    """Who ran the job, when, and the error it ended with (None if it succeeded)."""

    worker_id: str
    started_at: datetime
    finished_at: datetime | None = None
    error: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker_id": self.worker_id,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attempt:
        return cls(
            worker_id=data["worker_id"],
            started_at=_time(data["started_at"]),
            finished_at=_time(data.get("finished_at")),
            error=data.get("error"),
        )


def error_details(exc: BaseException) -> dict[str, str]:
    """Describe ``exc`` for storage: class path, message and the full traceback.

    The text is escaped where no database would store it (NUL characters, lone
    surrogates from ``os.fsdecode``), so that recording a failure never fails on it.
    """
    kind = type(exc)
    return {
        "exception_class": storable(f"{kind.__module__}.{kind.__qualname__}")[:CLASS_PATH_LENGTH],
        "message": storable(_message(exc)),
        "traceback": storable("".join(traceback.format_exception(exc))),
    }


def sealed_error(task_path: str, error: dict[str, str] | None) -> dict[str, str] | None:
    """``error`` as stored for a job of the task at ``task_path``: an encrypted task's
    message and traceback sealed (its class path, code and not data, stays readable).

    Never plaintext: if sealing fails (no key), both are replaced by a fixed text.
    """
    if error is None or not encryption.is_encrypted(task_path):
        return error
    try:
        sealed = {key: encryption.seal_text(error[key]) for key in ("message", "traceback")}
    except Exception:
        sealed = {"message": UNSEALABLE, "traceback": ""}
    return {**error, **sealed}


#: An encrypted job's error when it could not be sealed (STEADY_QUEUE_ENCRYPTION_KEYS unset).
UNSEALABLE = "encrypted error: it could not be sealed (no encryption key), so it was not kept"


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a broken __str__ must not keep the failure from being recorded
        return f"<{type(exc).__qualname__}: str() failed>"


def storable(text: str) -> str:
    """``text`` with what databases refuse written as escapes: ``\\x00``, ``\\udcff``."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def refused_text(value: Any) -> str | None:
    """Say what in a JSON ``value`` no database stores as text, or None if nothing is."""
    if isinstance(value, str):
        if "\x00" in value:
            return "a NUL character"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a lone surrogate (undecodable bytes, as from os.fsdecode)"
    elif isinstance(value, dict):
        return next(filter(None, map(refused_text, [*value, *value.values()])), None)
    elif isinstance(value, list):
        return next(filter(None, map(refused_text, value)), None)
    return None


def _time(value: datetime | str | None) -> datetime | None:
    return value if value is None or isinstance(value, datetime) else parse_datetime(value)
