"""System checks: what the dashboard needs from the project's settings, said at startup.

Without these, a missing piece shows only as a 500 on the first page someone opens.
"""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.core import checks

REQUIRED_APPS = {
    "django_htmx": "django-htmx renders the dashboard's fragments and its script tag",
    "django_filters": "django-filter builds the job lists' filter forms",
    "django.contrib.auth": "the dashboard's access rules use users and permissions",
    "django.contrib.messages": "actions report their outcome as messages",
}
REQUIRED_MIDDLEWARE = {
    "django_htmx.middleware.HtmxMiddleware": "tells full-page from fragment requests",
    "django.contrib.sessions.middleware.SessionMiddleware": "keeps the operator logged in",
    "django.contrib.auth.middleware.AuthenticationMiddleware": "tells who the operator is",
    "django.contrib.messages.middleware.MessageMiddleware": "carries actions' outcomes",
}
REQUIRED_CONTEXT_PROCESSORS = {
    "django.template.context_processors.request": "the templates build links from the request",
    "django.contrib.messages.context_processors.messages": "pages show actions' outcomes",
}


@checks.register(checks.Tags.compatibility)
def check_dependencies(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    for app, why in REQUIRED_APPS.items():
        if not apps.is_installed(app):
            errors.append(
                checks.Error(
                    f"The Steady Queue dashboard needs {app!r} in INSTALLED_APPS: {why}.",
                    hint=f"Add {app!r} to INSTALLED_APPS (and install its package).",
                    id="steady_queue_dashboard.E001",
                )
            )
    middleware = list(getattr(settings, "MIDDLEWARE", None) or [])
    for name, why in REQUIRED_MIDDLEWARE.items():
        if name not in middleware:
            errors.append(
                checks.Error(
                    f"The Steady Queue dashboard needs {name!r} in MIDDLEWARE: it {why}.",
                    hint=f"Add {name!r} to MIDDLEWARE.",
                    id="steady_queue_dashboard.E002",
                )
            )
    processors = _context_processors()
    if processors is not None:
        for name, why in REQUIRED_CONTEXT_PROCESSORS.items():
            if name not in processors:
                errors.append(
                    checks.Error(
                        f"The Steady Queue dashboard needs the {name!r} context processor: {why}.",
                        hint="Add it to TEMPLATES[...]['OPTIONS']['context_processors'] of "
                        "the DjangoTemplates backend.",
                        id="steady_queue_dashboard.E003",
                    )
                )
    return errors


def _context_processors() -> set[str] | None:
    """The DjangoTemplates engines' context processors, or None when there is no such engine."""
    engines = [
        engine
        for engine in getattr(settings, "TEMPLATES", [])
        if engine.get("BACKEND") == "django.template.backends.django.DjangoTemplates"
    ]
    if not engines:
        return None
    return {
        name
        for engine in engines
        for name in engine.get("OPTIONS", {}).get("context_processors", [])
    }


@checks.register(checks.Tags.compatibility)
def check_read_database(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A READ_DATABASE that is no alias would fail every page with a 500."""
    from .conf import setting

    alias = setting("READ_DATABASE")
    if alias is None or alias in settings.DATABASES:
        return []
    return [
        checks.Error(
            f"STEADY_QUEUE_DASHBOARD['READ_DATABASE'] is {alias!r}, which is not in DATABASES.",
            hint="Name the alias of a replica of the queue database, or remove the setting.",
            id="steady_queue_dashboard.E004",
        )
    ]


@checks.register(checks.Tags.urls)
def check_mounts(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Each mount of the dashboard under a namespace must name a Steady Queue backend."""
    from django.core.exceptions import ImproperlyConfigured
    from django.urls import get_resolver

    from .instances import APP, instance

    errors = []
    for namespace in get_resolver().app_dict.get(APP, []):
        try:
            instance(namespace)
        except ImproperlyConfigured as exc:
            errors.append(
                checks.Error(
                    str(exc),
                    hint="Mount it with the alias of a Steady Queue backend in TASKS as its "
                    "namespace, or without a namespace for the project's queue database.",
                    id="steady_queue_dashboard.E005",
                )
            )
    return errors
