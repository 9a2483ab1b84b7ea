"""Durations as operators type them on a command line: ``90``, ``90s``, ``5m``, ``1h``, ``2d``."""

from __future__ import annotations

import math
import re
from datetime import timedelta

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", re.IGNORECASE)
# Durations are compared with "now minus the duration"; a century keeps that far inside
# what datetime (year 1) and timedelta (999,999,999 days) hold, and no job waits longer.
LONGEST = timedelta(days=36_500)


def parse_duration(text: str) -> timedelta:
    """Return ``text`` (seconds, or a number with s, m, h or d) as a timedelta.

    Raise ValueError, saying what is accepted, for anything else (also for negatives,
    and for durations over a century, which would overflow the dates they are taken from).
    """
    match = DURATION.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a duration: use seconds or a number with s, m, h or d "
            '(e.g. "90", "5m", "1h", "2d").'
        )
    number, unit = match.groups()
    seconds = float(number) * UNITS[(unit or "s").lower()]
    if not math.isfinite(seconds) or seconds > LONGEST.total_seconds():
        raise ValueError(f"{text.strip()[:40]!r} is too long a duration: give at most 36500d.")
    return timedelta(seconds=seconds)


def argument(text: str) -> timedelta:
    """``parse_duration`` for argparse: a bad value becomes a usage error, not a traceback."""
    import argparse

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
