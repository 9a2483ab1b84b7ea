"""Template tags of task pauses: whether a task is paused, and its pause/resume button."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from .. import adapter, instances

register = template.Library()


@register.simple_tag
def sq_task_paused(task_path: str) -> bool:
    """Whether ``task_path`` is paused (one query)."""
    return adapter.is_paused(task_path)


@register.simple_tag
def sq_task_pause_button(task_path: str, paused: bool) -> SafeString:
    """The first step of pausing or resuming a task: it asks before it acts.

    Posted with the page's ``#sq-row-actions`` form (its CSRF token and the page to come
    back to), as every action button of the console.
    """
    name, label = ("task-resume", _("Resume task")) if paused else ("task-pause", _("Pause task"))
    url = instances.url(name, task_path)
    return format_html(
        '<button type="submit" form="sq-row-actions" class="btn small" formaction="{}" '
        'hx-post="{}" hx-target="#sq-messages" hx-swap="outerHTML" data-task="{}">{}</button>',
        url,
        url,
        task_path,
        label,
    )
