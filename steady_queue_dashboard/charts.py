"""Charts drawn on the server as SVG geometry: no JavaScript chart library."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import formats, timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from steady_queue.models import states

WIDTH, HEIGHT = 720, 180
LEFT, BOTTOM, TOP = 44, 22, 8


@dataclass(frozen=True, kw_only=True)
class Span:
    key: str
    label: str | Promise
    length: timedelta
    bucket: timedelta
    # The day's chart reads every job finished that day: refresh it less often.
    refresh_seconds: int


SPANS = {
    "hour": Span(
        key="hour",
        label=_("Last hour"),
        length=timedelta(hours=1),
        bucket=timedelta(minutes=1),
        refresh_seconds=10,
    ),
    "day": Span(
        key="day",
        label=_("Last 24 hours"),
        length=timedelta(days=1),
        bucket=timedelta(minutes=15),
        refresh_seconds=60,
    ),
}


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str
    title: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    total: dict[str, int]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: float = HEIGHT - BOTTOM


def activity_chart(
    per_bucket: dict[str, dict[datetime, int]], span: Span, starts: list[datetime]
) -> Chart:
    """Stack finished and failed jobs into bars, one per bucket start in ``starts``."""
    rates = {kind: _rates(counts, starts, span) for kind, counts in per_bucket.items()}
    # At least 1 job per minute, so that the axis counts whole jobs.
    highest = max((f + x for f, x in zip(*rates.values(), strict=True)), default=0)
    peak = max(_nice_ceiling(highest), 1)
    slot = (WIDTH - LEFT) / len(starts)
    bars = []
    for index, start in enumerate(starts):
        base = HEIGHT - BOTTOM
        for kind in (states.FINISHED, states.FAILED):
            height = _scale(rates[kind][index], peak)
            base -= height
            if height > 0:
                title = _bar_title(kind, start, rates[kind][index])
                bars.append(
                    Bar(LEFT + index * slot + 0.5, base, max(slot - 1, 1), height, kind, title)
                )
    return Chart(
        bars=bars,
        y_ticks=[Tick(HEIGHT - BOTTOM - _scale(v, peak), _whole(v)) for v in _y_values(peak)],
        x_ticks=_time_ticks(starts, slot),
        total={kind: sum(counts.values()) for kind, counts in per_bucket.items()},
    )


def meter_widths(values: dict[str, float], width: int = 160) -> dict[str, float]:
    """Scale each value to a bar of at most ``width`` pixels, the largest filling it."""
    peak = max(values.values(), default=0) or 1
    return {key: round(width * value / peak, 1) for key, value in values.items()}


def bucket_starts(now: datetime, span: Span) -> list[datetime]:
    naive = timezone.is_naive(now)  # USE_TZ = False: the database holds local wall times
    if naive:
        now = timezone.make_aware(now)
    step = int(span.bucket.total_seconds())
    epoch = int(now.timestamp()) // step * step
    last = datetime.fromtimestamp(epoch, tz=now.tzinfo)
    count = int(span.length / span.bucket)
    starts = [last - span.bucket * offset for offset in range(count - 1, -1, -1)]
    return [timezone.make_naive(start) for start in starts] if naive else starts


def _rates(counts: dict[datetime, int], starts: list[datetime], span: Span) -> list[float]:
    """Return the mean jobs per minute in each bucket."""
    minutes = span.bucket / timedelta(minutes=1)
    return [counts.get(start, 0) / minutes for start in starts]


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1
    magnitude = 10 ** math.floor(math.log10(value))
    return next(step * magnitude for step in (1, 2, 5, 10) if step * magnitude >= value)


def _y_values(peak: float) -> list[int]:
    """Axis values: whole numbers only (no "0.5 jobs per minute"), the middle one if whole."""
    top = max(math.ceil(peak), 1)
    return [0, top // 2, top] if top % 2 == 0 else [0, top]


def _whole(value: float) -> str:
    return formats.number_format(int(value), force_grouping=True)


def _scale(value: float, peak: float) -> float:
    return round((HEIGHT - BOTTOM - TOP) * value / peak, 2)


def _rate(value: float) -> str:
    return formats.number_format(value, decimal_pos=0 if value >= 10 or value == 0 else 1)


def _bar_title(kind: str, start: datetime, rate: float) -> str:
    label = _("finished") if kind == states.FINISHED else _("failed")
    when = formats.time_format(_local(start), "H:i")
    return f"{when} — {_rate(rate)} {label} / min"


def _time_ticks(starts: list[datetime], slot: float) -> list[Tick]:
    every = max(len(starts) // 6, 1)
    return [
        Tick(LEFT + index * slot, formats.time_format(_local(start), "H:i"))
        for index, start in enumerate(starts)
        if index % every == 0
    ]


def _local(when: datetime) -> datetime:
    return timezone.localtime(when) if timezone.is_aware(when) else when


@dataclass(frozen=True)
class Sparkline:
    points: str
    width: int
    height: int
    peak: int


def sparkline(values: list[int], width: int = 120, height: int = 24) -> Sparkline:
    """A polyline through ``values`` (oldest first), scaled to the highest; flat when all 0."""
    peak = max(values, default=0)
    step = width / max(len(values) - 1, 1)
    # One pixel of margin, so that the line is not cut at the top and bottom edges.
    usable = height - 2
    points = " ".join(
        f"{index * step:.1f},{height - 1 - (value / peak if peak else 0) * usable:.1f}"
        for index, value in enumerate(values)
    )
    return Sparkline(points, width, height, peak)
