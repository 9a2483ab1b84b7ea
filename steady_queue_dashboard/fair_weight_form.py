"""The form of a fairness key's runtime weight: set (a positive whole number) or cleared."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from . import adapter

# Far above any share an operator means (1 : a million), and within every integer column.
MAX_WEIGHT = 1_000_000
KEY_LENGTH = 255


class FairWeightForm(forms.Form):
    """What the operator asks for: ``weight`` (not when clearing) and, optionally, ``task``:
    the fair task it applies to; blank, every fair task keyed by that key."""

    weight = forms.IntegerField(
        label=_("Weight"),
        min_value=1,
        max_value=MAX_WEIGHT,
        error_messages={
            "invalid": _("A weight is a whole number of 1 or more, as in 1, 2 or 4."),
            "min_value": _("A weight is a whole number of 1 or more, as in 1, 2 or 4."),
        },
    )
    task = forms.CharField(label=_("Task"), required=False, max_length=255)

    def __init__(self, data, *, key: str, clearing: bool = False):
        super().__init__(data)
        self.key, self.clearing = key, clearing
        if clearing:
            del self.fields["weight"]

    def clean_task(self) -> str:
        task = self.cleaned_data["task"].strip()
        refused = adapter.fair_task_check(task) if task else None
        if refused:
            raise forms.ValidationError(refused)
        return task

    def clean(self) -> dict:
        if len(self.key) > KEY_LENGTH:
            raise forms.ValidationError(
                _("No fairness key is longer than %(max)d characters.") % {"max": KEY_LENGTH}
            )
        return super().clean()
