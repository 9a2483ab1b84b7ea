"""The form of a signal sent to a durable job from its page: a name and a JSON payload.

Everything the form can check without writing is checked here (the name, that the payload
is JSON and fits the engine's limit, that the job can still take the signal); the engine's
``send_signal`` checks again when it delivers, and what it refuses comes back to the form.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext_lazy as _

from . import adapter, masking

PAYLOAD_WIDGET = forms.Textarea(attrs={"rows": 4, "spellcheck": "false"})


class SignalForm(forms.Form):
    name = forms.CharField(
        label=_("Signal name"),
        max_length=adapter.SIGNAL_NAME_LENGTH,
        error_messages={"required": _("Name the signal, as the task waits for it.")},
    )
    payload = forms.CharField(
        label=_("Payload (JSON)"),
        required=False,
        widget=PAYLOAD_WIDGET,
        help_text=_("What wait_for_signal returns to the task; empty sends null."),
    )

    def __init__(self, data=None, *, job, wait: adapter.DurableWait | None):
        # The awaited signal's name, when the job waits for one, is what the operator means.
        super().__init__(data, initial={"name": wait.signal if wait else ""})
        self.job, self.wait = job, wait

    def clean_payload(self) -> Any:
        text = self.cleaned_data["payload"].strip()
        if not text:
            return None
        size = len(text.encode())
        # Far past the limit: refused unread (spaces aside, such a text cannot fit).
        if size > 4 * adapter.SIGNAL_PAYLOAD_LIMIT:
            raise forms.ValidationError(
                _("The payload is %(size)s; a signal carries at most %(limit)s of JSON.")
                % {
                    "size": filesizeformat(size),
                    "limit": filesizeformat(adapter.SIGNAL_PAYLOAD_LIMIT),
                }
            )
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                _("The payload is not valid JSON: %(error)s.") % {"error": exc}
            ) from exc
        # The engine's own rules (its size limit, NaN, text no database keeps).
        if refused := adapter.payload_refusal(payload):
            raise forms.ValidationError(refused)
        return payload

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not self.errors and (refused := adapter.signal_refusal(self.job, data["name"])):
            raise forms.ValidationError(refused)
        return data

    @property
    def shown_payload(self) -> str:
        """The payload as the review shows it: masked as the job's arguments are."""
        shown = masking.mask_metadata(self.cleaned_data["payload"], self.job.task_path)
        return json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False)

    def facts(self) -> dict[str, Any]:
        """What the confirmation signs: a digest of the payload, never the payload itself."""
        data = self.cleaned_data
        return {
            "action": "signal",
            "job": self.job.pk,
            "name": data["name"],
            "payload": adapter.digest(data["payload"]),
        }
