"""Filters for the job lists, limited to what the engine's indexes can serve."""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from steady_queue.models import states

from . import adapter
from .label_filter import ALL, LABEL, LABEL_MODE, LabelModeFilter, LabelsFilter
from .listings import Listing

PERIODS = {
    "15m": (timedelta(minutes=15), _("Last 15 minutes")),
    "1h": (timedelta(hours=1), _("Last hour")),
    "24h": (timedelta(days=1), _("Last 24 hours")),
    "7d": (timedelta(days=7), _("Last 7 days")),
}
KEYWORD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def parse_argument_search(text: str) -> tuple[str | None, Any]:
    """Split ``account_id=42`` into ("account_id", 42) and ``42`` into (None, 42)."""
    text = text.strip()
    match = KEYWORD.match(text)
    name, raw = (match.group(1), match.group(2).strip()) if match else (None, text)
    if not raw:
        raise ValidationError(_("Give a value to search for, as in 42 or account_id=42."))
    try:
        value = json.loads(raw, parse_constant=_not_a_value)
    except ValueError:
        return name, raw
    # Lists and objects are not single argument values, and numbers beyond what JSON
    # columns hold (1e999 is infinity; 40-digit integers overflow SQLite) are no argument
    # a job was called with: search for the text as typed.
    if isinstance(value, (list, dict)) or not _storable(value):
        return name, raw
    return name, value


def _not_a_value(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value.")


def _storable(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return math.isfinite(value)


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self):
        super().__init__(format="%Y-%m-%dT%H:%M")


class PriorityFilter(django_filters.NumberFilter):
    field_class = forms.IntegerField


class IdFilter(django_filters.NumberFilter):
    """A row id from a URL: a whole number the 64-bit key holds, else a form error."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        super().__init__(*args, min_value=1, max_value=2**63 - 1, **kwargs)


class JobFilter(django_filters.FilterSet):
    """Filter one status list; every field narrows an indexed column or a bounded scan."""

    task = django_filters.CharFilter(
        label=_("Task"),
        method="filter_task",
        help_text=_("Part of the task's path: charge_card finds demo.tasks.charge_card."),
        widget=forms.TextInput(attrs={"placeholder": _("e.g. charge_card")}),
    )
    queue = django_filters.CharFilter(label=_("Queue"), method="filter_queue")
    priority = PriorityFilter(
        label=_("Priority"), method="filter_priority", min_value=-100, max_value=100
    )
    period = django_filters.ChoiceFilter(
        label=_("Period"),
        choices=[(key, label) for key, (_delta, label) in PERIODS.items()],
        empty_label=_("Any time"),
        method="filter_period",
    )
    after = django_filters.DateTimeFilter(
        label=_("From"), method="filter_after", widget=DateTimeLocalInput()
    )
    before = django_filters.DateTimeFilter(
        label=_("Until"), method="filter_before", widget=DateTimeLocalInput()
    )
    error = django_filters.CharFilter(
        label=_("Error"),
        method="filter_error",
        help_text=_("Part of the error's class or message: Timeout, card declined."),
        widget=forms.TextInput(attrs={"placeholder": _("class or message")}),
    )
    key = django_filters.CharFilter(label=_("Concurrency key"), method="filter_key")
    fairness_key = django_filters.CharFilter(
        label=_("Fairness key"),
        method="filter_fairness_key",
        max_length=255,
        help_text=_(
            "A fair task's tenant (its @fair key), as the queue's Fair share panel shows it."
        ),
    )
    args = django_filters.CharFilter(
        label=_("Argument"),
        method="filter_arguments",
        validators=[parse_argument_search],
        help_text=_("42 matches a positional argument; account_id=42 a keyword argument."),
    )
    # Named as the URL spells them (label_filter.LABEL, LABEL_MODE): ?label=a&label=b.
    label = LabelsFilter(
        label=_("Labels"),
        method="filter_labels",
        help_text=_("Jobs with these labels; add one at a time, untick one to drop it."),
    )
    label_mode = LabelModeFilter(label=_("Match"), method="filter_label_mode")

    # A batch's or workflow run's jobs, as their pages link to them (indexed foreign keys).
    batch = IdFilter(label=_("Batch"), field_name="batch_id", widget=forms.HiddenInput)
    workflow = IdFilter(label=_("Workflow"), field_name="workflow_run_id", widget=forms.HiddenInput)

    def __init__(self, data=None, queryset=None, *, listing: Listing, **kwargs):
        self.listing = listing
        super().__init__(data, queryset, **kwargs)
        # The time filters apply to the list's own time column: say which.
        self.filters["period"].label = listing.time_label
        self.filters["after"].label = _("%(time)s from") % {"time": listing.time_label}
        self.filters["before"].label = _("%(time)s until") % {"time": listing.time_label}
        if listing.status != states.FAILED:
            del self.filters["error"]
        if listing.status == states.THROTTLED:
            self.filters["key"].label = _("Rate limit key")
            self.filters["key"].extra["help_text"] = _(
                "The window's key (* for a task-wide one); with the task, one window exactly."
            )
        elif listing.status != states.BLOCKED:
            del self.filters["key"]

    @property
    def is_active(self) -> bool:
        if not self.is_bound:
            return False
        return bool(self.errors) or bool(self.active_values())

    def active_values(self) -> dict[str, Any]:
        """The valid filters that narrow the list (the label mode only beside labels)."""
        values = {
            name: value
            for name, value in self.form.cleaned_data.items()
            if value not in (None, "", [])
        }
        if LABEL not in values:
            values.pop(LABEL_MODE, None)
        return values

    @property
    def argument_query(self) -> Q | None:
        """The argument search, which the list applies within a bounded window of rows."""
        if not self.is_bound or "args" in self.errors:
            return None
        text = self.form.cleaned_data.get("args")
        return adapter.argument_query(*parse_argument_search(text)) if text else None

    def filter_task(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        value = value.strip()
        # A full path (a clicked task link) walks the task index; otherwise operators type
        # the short name they know, and a substring finds it (charge_card, tasks.charge).
        if queryset.model.objects.filter(task_path=value).exists():
            return queryset.filter(task_path=value)
        return queryset.filter(task_path__icontains=value)

    def filter_queue(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(**{self.listing.queue_field: value.strip()})

    def filter_priority(self, queryset: QuerySet, name: str, value) -> QuerySet:
        return queryset.filter(**{self.listing.priority_field: value})

    def filter_period(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        since = timezone.now() - PERIODS[value][0]
        return queryset.filter(**{f"{self.listing.time_field}__gte": since})

    def filter_after(self, queryset: QuerySet, name: str, value) -> QuerySet:
        return queryset.filter(**{f"{self.listing.time_field}__gte": value})

    def filter_before(self, queryset: QuerySet, name: str, value) -> QuerySet:
        return queryset.filter(**{f"{self.listing.time_field}__lt": value})

    def filter_error(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        value = value.strip()
        return queryset.filter(
            Q(failed_execution__exception_class__icontains=value)
            | Q(failed_execution__message__icontains=value)
        )

    def filter_key(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if self.listing.status == states.THROTTLED:
            # By the windows' digests, which the throttled jobs' index starts with.
            return queryset.filter(throttled_execution__bucket_key__in=adapter.window_keys(value))
        return queryset.filter(blocked_execution__concurrency_key=value)

    def filter_fairness_key(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # Ready jobs by their ready row's copy (what the claims read); others by the job's.
        if self.listing.status == states.READY:
            return queryset.filter(ready_execution__fairness_key=value.strip())
        return queryset.filter(fairness_key=value.strip())

    def filter_labels(self, queryset: QuerySet, name: str, labels: list[str]) -> QuerySet:
        mode = self.form.cleaned_data.get(LABEL_MODE) or ALL
        return adapter.labelled(queryset, labels, mode)

    def filter_label_mode(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset  # read by filter_labels

    def filter_arguments(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # Applied by the list within a bounded window (see argument_query), or in full by
        # bulk actions: an unindexed JSON match must never scan millions of rows per page.
        return queryset


class BatchFilter(django_filters.FilterSet):
    """The batches list: by part of the description (a scan of the batches table)."""

    description = django_filters.CharFilter(
        label=_("Description"), lookup_expr="icontains", max_length=255
    )


class WorkflowRunFilter(django_filters.FilterSet):
    """The workflow runs list: by part of the workflow's name."""

    name = django_filters.CharFilter(label=_("Name"), lookup_expr="icontains", max_length=255)


class ArchiveFilter(django_filters.FilterSet):
    """The Archive page's search: by task, error text and labels (``adapter/archive.py``
    says which columns each reads)."""

    task = django_filters.CharFilter(
        label=_("Task"),
        method="filter_task",
        max_length=255,
        help_text=_("Part of the task's path: charge_card finds demo.tasks.charge_card."),
        widget=forms.TextInput(attrs={"placeholder": _("e.g. charge_card")}),
    )
    error = django_filters.CharFilter(
        label=_("Error"),
        method="filter_error",
        max_length=255,
        help_text=_("Part of the last error's class or message: Timeout, card declined."),
        widget=forms.TextInput(attrs={"placeholder": _("class or message")}),
    )
    label = LabelsFilter(
        label=_("Labels"),
        method="filter_labels",
        help_text=_("Archived jobs with these labels; add one at a time, untick one to drop it."),
    )
    label_mode = LabelModeFilter(label=_("Match"), method="filter_label_mode")

    def filter_task(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return adapter.archived_by_task(queryset, value.strip())

    def filter_error(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return adapter.archived_by_error(queryset, value.strip())

    def filter_labels(self, queryset: QuerySet, name: str, labels: list[str]) -> QuerySet:
        mode = self.form.cleaned_data.get(LABEL_MODE) or ALL
        return adapter.archived_labelled(queryset, labels, mode)

    def filter_label_mode(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset  # read by filter_labels
