"""Serialize task arguments to JSON and back, beyond JSON's own types.

Supported: JSON types, datetime, date, time, timedelta, Decimal, UUID and saved
Django model instances (stored as app label, model name and primary key, and
fetched again when the job runs). Anything else is refused before a row is written.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings
from decimal import Decimal
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

from django.apps import apps
from django.conf import settings
from django.db import models
from django.utils import timezone

from . import encryption

TAG = "__sq__"


class SerializationError(TypeError):
    """An argument of a type Steady Queue cannot store; nothing was enqueued."""


class DeserializationError(Exception):
    """A stored argument could not be rebuilt, for example a model row that was deleted."""


def serialize(args: list | tuple, kwargs: dict) -> dict[str, Any]:
    """Return the stored form of a call's arguments, or raise SerializationError."""
    return {
        "args": [_dump(value, f"args[{i}]") for i, value in enumerate(args)],
        "kwargs": {_key(k, "kwargs"): _dump(v, f"kwargs[{k!r}]") for k, v in kwargs.items()},
    }


def deserialize(stored: dict[str, Any]) -> tuple[list, dict]:
    """Rebuild ``(args, kwargs)``; raise DeserializationError if that is impossible.

    Sealed arguments (``steady_queue.encryption``) are opened first: this is where a
    run reads them, and ``EncryptionKeyMissing`` ends a run whose key is gone.
    """
    stored = encryption.opened(stored)
    args = [_load(value) for value in stored.get("args", [])]
    kwargs = {key: _load(value) for key, value in stored.get("kwargs", {}).items()}
    return args, kwargs


def display(stored: dict[str, Any]) -> tuple[list, dict]:
    """Return a JSON-safe view of stored arguments without touching the database."""
    args = [_show(value) for value in stored.get("args", [])]
    kwargs = {key: _show(value) for key, value in stored.get("kwargs", {}).items()}
    return args, kwargs


def _dump(value: Any, path: str) -> Any:
    if isinstance(value, str):
        return _text(value, path)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SerializationError(
                f"Argument {path} of type builtins.float is {value!r}, which JSON cannot store."
            )
        # PostgreSQL's jsonb prints 1e+16 as 10000000000000000, which loads as an int,
        # and -0.0 as 0: both are kept as text.
        exponent = value.is_integer() and "e" in repr(value)
        negative_zero = value == 0 and math.copysign(1, value) < 0
        return {TAG: "float", "value": repr(value)} if exponent or negative_zero else value
    if isinstance(value, (list, tuple)):
        return [_dump(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        items = {_key(k, path): _dump(v, f"{path}[{k!r}]") for k, v in value.items()}
        return {TAG: "dict", "items": items} if TAG in items else items
    for kind, dumper in _DUMPERS:
        if isinstance(value, kind):
            return dumper(value, path)
    raise SerializationError(
        f"Argument {path} of type {type(value).__module__}.{type(value).__qualname__} "
        "cannot be serialized. Supported: JSON types, datetime, date, time, timedelta, "
        "Decimal, UUID and saved model instances."
    )


def _key(key: Any, path: str) -> str:
    if not isinstance(key, str):
        raise SerializationError(
            f"Argument {path} has a key {key!r} of type {type(key).__name__}; keys must be str."
        )
    return _text(key, f"{path} key")


def _text(value: str, path: str) -> str:
    # PostgreSQL's jsonb refuses NUL, and no database stores a lone surrogate (what
    # os.fsdecode makes of a non-UTF-8 file name): refuse both everywhere, before a
    # row is written, instead of failing inside the INSERT on one database only.
    if "\x00" in value:
        raise SerializationError(f"Argument {path} contains a NUL character (\\x00).")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SerializationError(
                f"Argument {path} contains {value[exc.start]!r}, a lone surrogate that is not "
                "valid Unicode text (decode file names with errors='replace', or pass bytes "
                "as base64)."
            ) from None
    return value


def _dump_model(instance: models.Model, path: str) -> dict:
    if instance.pk is None:
        raise SerializationError(f"Argument {path} is an unsaved {type(instance).__name__}.")
    meta = instance._meta
    pk = _dump(instance.pk, f"{path}.pk")
    return {TAG: "model", "app_label": meta.app_label, "model": meta.model_name, "pk": pk}


def _tagged(kind: str, convert):
    return lambda value, path: {TAG: kind, "value": convert(value)}


def _dump_datetime(value: dt.datetime, path: str) -> dict:
    if settings.USE_TZ and timezone.is_naive(value):
        # As Django's DateTimeField does: warn, and read it in the default time zone.
        warnings.warn(
            f"Argument {path} received a naive datetime ({value}) while time zone "
            "support is active.",
            RuntimeWarning,
            stacklevel=2,
        )
        value = timezone.make_aware(value, timezone.get_default_timezone())
    stored = {TAG: "datetime", "value": value.isoformat()}
    # ISO 8601 keeps only the offset: keep the zone too, so that date arithmetic
    # in the task follows the same daylight saving rules as the caller's.
    if isinstance(value.tzinfo, ZoneInfo):
        stored["zone"] = value.tzinfo.key
    return stored


def _load_datetime(stored: dict) -> dt.datetime:
    value = dt.datetime.fromisoformat(stored["value"])
    return value.astimezone(ZoneInfo(stored["zone"])) if "zone" in stored else value


def _timedelta_parts(value: dt.timedelta) -> list[int]:
    return [value.days, value.seconds, value.microseconds]


# datetime before date: a datetime is also a date.
_DUMPERS = [
    (dt.datetime, _dump_datetime),
    (dt.date, _tagged("date", dt.date.isoformat)),
    (dt.time, _tagged("time", dt.time.isoformat)),
    (dt.timedelta, _tagged("timedelta", _timedelta_parts)),
    (Decimal, _tagged("decimal", str)),
    (UUID, _tagged("uuid", str)),
    (models.Model, _dump_model),
]


def _load(value: Any) -> Any:
    if isinstance(value, list):
        return [_load(item) for item in value]
    if not isinstance(value, dict):
        return value
    kind = value.get(TAG)
    if kind is None:
        return {key: _load(item) for key, item in value.items()}
    if kind == "dict":
        return {key: _load(item) for key, item in value["items"].items()}
    if kind == "model":
        return _load_model(value)
    if kind == "datetime":
        return _load_datetime(value)
    return _LOADERS[kind](value["value"])


def _load_model(value: dict) -> models.Model:
    label = f"{value['app_label']}.{value['model']}"
    try:
        model = apps.get_model(value["app_label"], value["model"])
    except LookupError as exc:
        raise DeserializationError(f"Model {label} is not installed.") from exc
    pk = _load(value["pk"])
    try:
        return model._base_manager.get(pk=pk)
    except model.DoesNotExist as exc:
        raise DeserializationError(f"{label} with pk={pk!r} no longer exists.") from exc


_LOADERS = {
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": lambda parts: dt.timedelta(days=parts[0], seconds=parts[1], microseconds=parts[2]),
    "decimal": Decimal,
    "float": float,
    "uuid": UUID,
}


def _show(value: Any) -> Any:
    if isinstance(value, list):
        return [_show(item) for item in value]
    if not isinstance(value, dict):
        return value
    kind = value.get(TAG)
    if kind is None:
        return {key: _show(item) for key, item in value.items()}
    if kind == "dict":
        return {key: _show(item) for key, item in value["items"].items()}
    if kind == "model":
        return _show(value["pk"])
    if kind == "timedelta":
        return str(_LOADERS["timedelta"](value["value"]))
    if kind == "float":
        return float(value["value"])
    return value["value"]
