"""The job lists' label filter: labels from repeated URL parameters, and any/all.

The URL carries each label as one ``label`` parameter (``?label=a&label=b&label_mode=any``),
so a link or bookmark holds any label whatever its characters (commas, spaces, ``&``),
and a chip's link adds one parameter. The form shows the labels chosen as ticked boxes
(untick one to drop it) beside an empty box to add one: no script is needed.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from steady_queue.labels import MAX_LABELS, MAX_LENGTH

LABEL = "label"
LABEL_MODE = "label_mode"
ALL, ANY = "all", "any"
MODES = [(ALL, _("all of them")), (ANY, _("any of them"))]
# A job holds at most MAX_LABELS labels of at most MAX_LENGTH characters (the engine
# refuses more). The filter takes as many, in either mode: with "all" more could match
# nothing, and with "any" the bound keeps a pasted list of a thousand labels from becoming
# a query with a thousand terms; beyond it, a clear error.


class LabelsInput(forms.Widget):
    """The labels chosen (ticked boxes named ``label``) and a text box to add one."""

    template_name = "steady_queue_dashboard/jobs/labels_input.html"

    def value_from_datadict(self, data, files, name):
        return data.getlist(name) if hasattr(data, "getlist") else data.get(name)

    def value_omitted_from_data(self, data, files, name):
        return name not in data

    def format_value(self, value):
        if value is None:
            return []
        values = value if isinstance(value, list | tuple) else [value]
        return [str(label) for label in values if str(label).strip()]

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["widget"]["labels"] = context["widget"]["value"]
        return context


class LabelsField(forms.Field):
    """A list of labels: blank ones dropped (the empty box), duplicates merged.

    A label is matched as given, spaces and all: a chip's link must find its own label.
    """

    widget = LabelsInput

    def to_python(self, value) -> list[str]:
        if value in (None, ""):
            return []
        values = value if isinstance(value, list | tuple) else [value]
        labels: list[str] = []
        for raw in values:
            label = str(raw)
            if label.strip() and label not in labels:
                labels.append(label)
        return labels

    def validate(self, value: list[str]) -> None:
        super().validate(value)
        if len(value) > MAX_LABELS:
            raise ValidationError(
                _("Filter by at most %(max)s labels."),
                code="max_labels",
                params={"max": MAX_LABELS},
            )
        for label in value:
            if len(label) > MAX_LENGTH:
                raise ValidationError(
                    _("A label has at most %(max)s characters."),
                    code="max_length",
                    params={"max": MAX_LENGTH},
                )
            if "\x00" in label:
                # PostgreSQL's text and JSON refuse NUL: no job can hold such a label.
                raise ValidationError(_("A label cannot hold a NUL character."), code="null")


class LabelsFilter(django_filters.Filter):
    field_class = LabelsField


class LabelModeFilter(django_filters.ChoiceFilter):
    """How several labels combine; no empty choice, "all" first: the usual tag filter."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, choices=MODES, empty_label=None, **kwargs)


def without_idle_mode(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop the mode when no label is given: it filters nothing, and says nothing."""
    if any(name == LABEL for name, _value in pairs):
        return pairs
    return [(name, value) for name, value in pairs if name != LABEL_MODE]
