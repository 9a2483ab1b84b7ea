"""One dashboard, several queue databases: each mount of the URLconf serves one backend.

Mounted once, the dashboard shows the project's queue database. To show another
Steady Queue backend's own database (``TASKS[alias]["OPTIONS"]["database"]``), mount
the URLconf again with the backend's alias as its instance namespace::

    path("jobs/", include("steady_queue_dashboard.urls")),
    path("jobs-billing/", include("steady_queue_dashboard.urls", namespace="billing")),

Django resolves ``{% url "steady_queue_dashboard:..." %}`` within the instance the
request came through, so every link stays on its backend; Python code builds URLs
with ``url()`` below, which does the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.urls import get_resolver, reverse

from steady_queue import db, ours

APP = "steady_queue_dashboard"
# The instance of the request being served (``current_app`` for reverse()).
_current: ContextVar[str | None] = ContextVar("steady_queue_dashboard_instance", default=None)


@dataclass(frozen=True)
class Instance:
    namespace: str
    #: The TASKS alias it shows ("" for the project's queue database).
    backend: str
    database: str

    @property
    def label(self) -> str:
        return self.backend or "default"


def url(name: str, *args, **kwargs) -> str:
    """``reverse("steady_queue_dashboard:<name>")`` within the current instance."""
    return reverse(
        f"{APP}:{name}", args=args or None, kwargs=kwargs or None, current_app=_current.get()
    )


def instance(namespace: str | None) -> Instance:
    """The instance mounted with ``namespace``; ImproperlyConfigured when it is no backend."""
    if not namespace or namespace == APP:
        return Instance(APP, "", db.alias())
    from steady_queue.compat import task_backends

    try:
        backend = task_backends[namespace]
    except ImproperlyConfigured as exc:
        raise ImproperlyConfigured(
            f"The dashboard is mounted with namespace {namespace!r}, which is no TASKS backend."
        ) from exc
    if not ours.is_ours(backend):
        raise ImproperlyConfigured(
            f"The dashboard is mounted with namespace {namespace!r}: not a Steady Queue backend."
        )
    return Instance(namespace, namespace, backend.database or db.alias())


def mounted() -> list[Instance]:
    """Every mount of the dashboard in the root URLconf, the default first."""
    namespaces = get_resolver().app_dict.get(APP, [])
    found = [instance(namespace) for namespace in namespaces]
    return sorted(found, key=lambda entry: (entry.namespace != APP, entry.namespace))


def switcher() -> list[tuple[Instance, str, bool]]:
    """(instance, its overview URL, whether it is the current one) of each mount; [] for one."""
    found = mounted()
    if len(found) < 2:
        return []
    current = _current.get() or APP
    return [
        (entry, reverse(f"{APP}:overview", current_app=entry.namespace), entry.namespace == current)
        for entry in found
    ]


@contextlib.contextmanager
def serving(request: HttpRequest) -> Iterator[Instance]:
    """Serve ``request`` from its instance's database (URLs built within the instance)."""
    match = getattr(request, "resolver_match", None)
    current = instance(match.namespace if match else None)
    token = _current.set(current.namespace)
    try:
        with db.using_alias(current.database if current.backend else None):
            yield current
    finally:
        _current.reset(token)
