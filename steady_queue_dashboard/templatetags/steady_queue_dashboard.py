"""Template helpers: relative times with the exact time on hover, durations, capped counts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils import formats, timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .. import adapter, instances, masking
from ..conf import setting
from ..label_filter import LABEL
from ..listings import LISTINGS

register = template.Library()


ACTION_LABELS = {
    "retry": gettext_lazy("Retry"),
    "discard": gettext_lazy("Discard"),
    "cancel": gettext_lazy("Cancel"),
    "dispatch": gettext_lazy("Run now"),
    "release": gettext_lazy("Release"),
    "release-next": gettext_lazy("Release next"),
    "pause": gettext_lazy("Pause"),
    "resume": gettext_lazy("Resume"),
    "run": gettext_lazy("Run now"),
    "enable": gettext_lazy("Enable"),
    "disable": gettext_lazy("Disable"),
}
BUTTON_CLASSES = {
    "discard": "btn small danger",
    "cancel": "btn small danger",
    "run": "btn small primary",
}


@register.simple_tag
def sq_button(url_name: str, target: Any, action: str) -> SafeString:
    """Render an action button: htmx posts it; without JavaScript it submits a plain form.

    The form (``#sq-row-actions`` in the base template) carries the CSRF token and the
    page to come back to, so that buttons can sit inside tables and other forms.
    """
    url = instances.url(url_name, target)
    return format_html(
        '<button type="submit" form="sq-row-actions" class="{}" formaction="{}" hx-post="{}"'
        ' hx-target="#sq-messages" hx-swap="outerHTML">{}</button>',
        BUTTON_CLASSES.get(action, "btn small"),
        url,
        url,
        ACTION_LABELS[action],
    )


@register.simple_tag
def sq_backends() -> list:
    """The dashboard's mounts, one per queue database, to switch between (none if one)."""
    return instances.switcher()


@register.simple_tag
def sq_logout_url() -> str:
    """Where "Log out" posts: the LOGOUT_URL setting, else the "logout" or admin's URL."""
    configured = setting("LOGOUT_URL")
    if configured:
        return configured
    for name in ("logout", "admin:logout"):
        try:
            return reverse(name)
        except NoReverseMatch:
            continue
    return ""


@register.filter
def action_label(action: str) -> str:
    return ACTION_LABELS[action]


@register.simple_tag
def sq_time(value: datetime | str | None, exact: bool = False) -> SafeString | str:
    """Render ``value`` as "3 minutes ago" / "in 5 minutes", exact time in the tooltip.

    With ``exact``, the exact time shows beside it too: for columns an operator
    compares (when did these failures start, which action came first).
    """
    when = parse_datetime(value) if isinstance(value, str) else value
    if when is None:
        return "—"
    # strftime, not date_format: this runs for every time on a page of fifty rows.
    # With USE_TZ = False, times are naive and already local.
    local = timezone.localtime(when) if timezone.is_aware(when) else when
    exact_text = local.strftime("%Y-%m-%d %H:%M:%S %Z").rstrip()
    shown = local.strftime("%Y-%m-%d %H:%M:%S").rstrip()
    if exact:
        return format_html(
            '<time datetime="{}" title="{}">{} <span class="exact-time">{}</span></time>',
            when.isoformat(),
            exact_text,
            relative(when),
            shown,
        )
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', when.isoformat(), exact_text, relative(when)
    )


@register.filter
def exact_time(when: datetime | None) -> str:
    """The exact local time, where "in 5 min" would mislead (a time that no longer comes)."""
    if not when:
        return "—"
    local = timezone.localtime(when) if timezone.is_aware(when) else when  # USE_TZ = False
    return local.strftime("%Y-%m-%d %H:%M:%S %Z").rstrip()


def relative(when: datetime, now: datetime | None = None) -> str:
    delta = (now or timezone.now()) - when
    if abs(delta) < timedelta(seconds=1):
        return _("just now")
    if delta > timedelta(0):
        return _("%(duration)s ago") % {"duration": duration(delta)}
    return _("in %(duration)s") % {"duration": duration(-delta)}


@register.filter
def duration(delta: timedelta | None) -> str:
    """Render a duration compactly: "850 ms", "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h"."""
    if delta is None:
        return "—"
    seconds = delta.total_seconds()
    if seconds < 1:
        return _("%(n)d ms") % {"n": seconds * 1000}
    units = [(86400, _("d")), (3600, _("h")), (60, _("min")), (1, _("s"))]
    parts = []
    remainder = int(seconds)
    for size, unit in units:
        # Seconds follow a larger unit ("3 min 5 s"), but a round one stands alone ("1 min").
        if remainder >= size or (parts and size == 1 and remainder):
            parts.append(f"{remainder // size} {unit}")
            remainder %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


@register.filter
def seconds(value: float | None) -> str:
    """Render seconds of a timing: "4 ms", "2.5 s", then as ``duration``."""
    if value is None:
        return "—"
    if value < 1:
        return _("%(n)d ms") % {"n": round(value * 1000)}
    if value < 10:
        return _("%(n)s s") % {"n": formats.number_format(value, 1)}
    return duration(timedelta(seconds=value))


@register.filter
def percent(value: float | None) -> str:
    """Render a ratio as "2.5 %" ("—" for None)."""
    if value is None:
        return "—"
    return _("%(n)s %%") % {"n": formats.number_format(value * 100, 1)}


@register.filter
def since(when: datetime | None) -> timedelta | None:
    return timezone.now() - when if when else None


@register.filter
def is_past(when: datetime | None) -> bool:
    return when is not None and when < timezone.now()


@register.filter
def arguments_preview(source: Any) -> str:
    """Preview a job's or recurring task's arguments (or stored arguments), masked."""
    if hasattr(source, "task_path"):
        return adapter.arguments_preview(source.arguments, task_path=source.task_path)
    return adapter.arguments_preview(source)


@register.filter
def shown(value: Any) -> Any:
    """A stored value as the console shows it: an encrypted task's as "encrypted"."""
    return masking.shown(value)


@register.filter
def run_time(job) -> timedelta | None:
    return adapter.run_time(job)


@register.filter
def count(tally: Any) -> str:
    """Render a capped count: 1,234 or 500,000+."""
    text = formats.number_format(tally.value, force_grouping=True)
    return f"{text}+" if tally.capped else text


@register.filter
def number(value: int) -> str:
    return formats.number_format(value, force_grouping=True)


@register.inclusion_tag("steady_queue_dashboard/includes/progress.html")
def sq_progress(progress: dict | None) -> dict:
    """Render a job's reported progress as a bar with "current / total" and its message."""
    progress = progress if isinstance(progress, dict) else {}
    current, total = progress.get("current"), progress.get("total")
    known = isinstance(current, (int, float)) and isinstance(total, (int, float)) and total > 0
    return {
        "current": current,
        "total": total,
        "percent": min(100, round(100 * current / total)) if known else None,
        "message": masking.shown(progress.get("message") or ""),
        "reported": bool(progress),
    }


# Process metadata holding seconds (the engine writes floats: 600.0, 0.1).
SECONDS_KEYS = ("polling_interval", "concurrency_maintenance_interval")


@register.filter
def metadata_value(value: Any, key: str) -> str:
    """Render a process's metadata value for people, not as a Python repr: queues as
    "default, reports", None as "—", intervals as "10 min", flags as yes or no."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, (list, tuple)):
        return ", ".join(metadata_value(item, "") for item in value) or "—"
    if isinstance(value, dict):
        return ", ".join(f"{name}: {metadata_value(item, name)}" for name, item in value.items())
    if isinstance(value, (int, float)) and key in SECONDS_KEYS:
        return seconds(float(value))
    if isinstance(value, float):
        return formats.number_format(value, 0 if value.is_integer() else 2)
    return str(value)


# A workflow step's state that is no list's: the list its job is (or was last) on.
STEP_LISTS = {"succeeded": "finished", "dependency-failed": "failed"}


@register.inclusion_tag("steady_queue_dashboard/includes/labels.html")
def sq_labels(labels: Any, status: str = "", **filters: Any) -> dict:
    """Render labels as chips; each links to the ``status`` job list filtered by it.

    ``filters`` are kept in each link (a batch page's chips keep ``batch``); a status
    that is no list's (a discarded step) shows plain chips. Reads no database.
    """
    labels = labels if isinstance(labels, list | tuple) else []
    status = STEP_LISTS.get(status, status)
    base = instances.url("job-list", status) if status in LISTINGS else ""
    kept = [(name, value) for name, value in filters.items() if value not in (None, "")]
    chips = [
        (str(label), f"{base}?{urlencode([*kept, (LABEL, str(label))])}" if base else "")
        for label in labels
    ]
    return {"chips": chips}


@register.filter
def list_status(job: Any) -> str:
    """The job list a job is on (a cancelled job's is "cancelled"), for links to it."""
    listing = adapter.listing_for(job)
    return listing.status if listing else ""
