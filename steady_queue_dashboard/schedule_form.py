"""The console's form of a recurring schedule made at run time, checked as ``schedule`` checks.

A valid form holds its ``preview`` (the schedule in words and its next fire times) and
its ``facts``: the values the confirmation token signs, so that "Save" stores exactly
what the preview showed.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from steady_queue.exceptions import ScheduleError

from . import adapter

SMALL_TEXT = forms.Textarea(attrs={"rows": 2})


class ScheduleForm(forms.Form):
    key = forms.CharField(label=_("Key"), max_length=255)
    task = forms.CharField(label=_("Task (dotted path)"), max_length=255)
    cron = forms.CharField(
        label=_("Cron schedule"),
        max_length=255,
        help_text=_("Five fields (minute hour day month weekday), an optional sixth for seconds."),
    )
    timezone = forms.CharField(
        label=_("Time zone"),
        required=False,
        max_length=64,
        help_text=_("An IANA name such as Europe/Paris; empty for the site's TIME_ZONE."),
    )
    args = forms.CharField(
        label=_("Arguments (JSON list)"), required=False, initial="[]", widget=SMALL_TEXT
    )
    kwargs = forms.CharField(
        label=_("Keyword arguments (JSON object)"),
        required=False,
        initial="{}",
        widget=SMALL_TEXT,
    )
    queue_name = forms.CharField(label=_("Queue"), required=False, max_length=255)
    priority = forms.IntegerField(label=_("Priority"), required=False)
    description = forms.CharField(label=_("Description"), required=False, widget=SMALL_TEXT)
    catch_up = forms.IntegerField(label=_("Catch up (seconds)"), required=False, min_value=1)

    def __init__(self, *args: Any, key: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.preview: adapter.Preview | None = None
        if key is not None:  # editing: the key is the URL's, not the form's
            self.fields["key"].disabled = True
            self.fields["key"].initial = key

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        loaded = {name: self._json(name, data.get(name) or default) for name, default in
                  (("args", "[]"), ("kwargs", "{}"))}  # fmt: skip
        if self.errors:
            return data
        try:
            self.preview = adapter.preview_schedule(
                data["key"], data["task"], **loaded, **self._schedule_fields(data)
            )
        except ScheduleError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
        return data

    def facts(self) -> dict[str, Any]:
        """What "Save" stores, normalized: the confirmation token signs exactly this."""
        recurrence = self.preview.recurrence
        return {
            "key": recurrence.key,
            "task": recurrence.task.module_path,
            "cron": recurrence.schedule,
            "timezone": recurrence.timezone,
            "args": list(recurrence.args),
            "kwargs": recurrence.kwargs,
            "queue_name": recurrence.queue_name or "",
            "priority": recurrence.priority,
            "description": recurrence.description,
            "catch_up": self.cleaned_data.get("catch_up"),
        }

    def _json(self, name: str, text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError as exc:
            self.add_error(name, _("Not valid JSON: %(error)s") % {"error": exc})
            return None

    @staticmethod
    def _schedule_fields(data: dict[str, Any]) -> dict[str, Any]:
        catch_up = data.get("catch_up")
        return {
            "cron": data["cron"],
            "timezone": data.get("timezone") or None,
            "queue_name": data.get("queue_name") or None,
            "priority": data.get("priority"),
            "description": data.get("description") or "",
            "catch_up": timedelta(seconds=catch_up) if catch_up else None,
        }
