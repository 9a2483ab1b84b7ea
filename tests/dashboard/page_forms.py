"""Forms out of pages, posted as a browser would; a keyset cursor as a link carries one."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser

from django.urls import reverse
from django.utils import timezone


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


class _Forms(HTMLParser):
    """Collect each form's hidden inputs, by the form's id (or its position)."""

    def __init__(self):
        super().__init__()
        self.forms: dict[str, list[tuple[str, str]]] = {}
        self.current: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.current = attrs.get("id") or attrs.get("action") or str(len(self.forms))
            self.forms[self.current] = []
        elif tag == "input" and self.current is not None and attrs.get("type") == "hidden":
            self.forms[self.current].append((attrs.get("name", ""), attrs.get("value", "")))

    def handle_endtag(self, tag):
        if tag == "form":
            self.current = None


def hidden_fields(html: str, form: str) -> dict[str, list[str]]:
    """The hidden inputs of the form with id (or action) ``form``, as POST data."""
    parser = _Forms()
    parser.feed(html)
    data: dict[str, list[str]] = {}
    for name, value in parser.forms[form]:
        data.setdefault(name, []).append(value)
    return data


def confirm_form(html: str) -> dict[str, list[str]]:
    """The hidden inputs of the confirmation form on a confirmation page."""
    parser = _Forms()
    parser.feed(html)
    (form,) = [fields for name, fields in parser.forms.items() if "sq-confirm-form" in name]
    data: dict[str, list[str]] = {}
    for name, value in form:
        data.setdefault(name, []).append(value)
    return data


def cursor(values) -> str:
    """A keyset cursor as the dashboard encodes one, holding any JSON values."""
    raw = json.dumps(values).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def ask_then_confirm(client, action_url: str, data: dict):
    """Post an action, then confirm on the question it answered with, as an operator does."""
    asked = client.post(action_url, data)
    assert asked.status_code == 200 and "sq-confirm-form" in asked.content.decode()
    return client.post(action_url, confirm_form(asked.content.decode()))


def local(when) -> str:
    """A time as the date filters' boxes hold it (local, to the minute)."""
    return timezone.localtime(when).strftime("%Y-%m-%dT%H:%M")
