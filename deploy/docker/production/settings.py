"""The demo site in a container: PostgreSQL, the secret key and hosts from the environment.

The Dockerfile copies this package beside the demo's ``config`` package and sets
``DJANGO_SETTINGS_MODULE=production.settings``. In your own project, put these lines
in your settings instead (docs/how-to/deploy-docker.md).

Environment: ``DJANGO_SECRET_KEY`` (required), ``DJANGO_ALLOWED_HOSTS`` (comma-separated),
``DATABASE_HOST``, ``DATABASE_PORT``, ``DATABASE_NAME``, ``DATABASE_USER``,
``DATABASE_PASSWORD``, ``STEADY_QUEUE_METRICS_TOKEN`` (optional: the scraper's bearer
token) and ``DJANGO_STATIC_ROOT`` (where collectstatic writes).
"""

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings import *  # noqa: F403

try:
    SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
except KeyError:
    raise ImproperlyConfigured("Set DJANGO_SECRET_KEY in the environment.") from None
DEBUG = False
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1").split(",")

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("DATABASE_HOST", "db"),
        "PORT": os.environ.get("DATABASE_PORT", "5432"),
        "NAME": os.environ.get("DATABASE_NAME", "app"),
        "USER": os.environ.get("DATABASE_USER", "app"),
        "PASSWORD": os.environ.get("DATABASE_PASSWORD", ""),
        # An unreachable server fails the health checks quickly instead of holding them
        # (README "Health checks").
        "OPTIONS": {"connect_timeout": 5},
    }
}

ROOT_URLCONF = "production.urls"

STATIC_ROOT = os.environ.get("DJANGO_STATIC_ROOT", "/srv/staticfiles")
# Collected into the image at build time: serve what collectstatic wrote, not the finders.
WHITENOISE_USE_FINDERS = False

# metrics_view answers this bearer token (or a staff user, when unset).
STEADY_QUEUE_METRICS_TOKEN = os.environ.get("STEADY_QUEUE_METRICS_TOKEN") or None
