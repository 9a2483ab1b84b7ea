"""Settings of the Steady Queue demo site.

SQLite set up for several processes (the web server, the supervisor and its
workers) writing at once, the dashboard mounted at /jobs/ and the admin login at
/admin/. Not for production: the secret key is public and DEBUG is on by default.
"""

import os
from pathlib import Path

from steady_queue.configuration import Configuration

BASE_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = BASE_DIR.parent

SECRET_KEY = "steady-queue-demo-only-this-key-is-public"
DEBUG = os.environ.get("DEMO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Let whitenoise serve static files under runserver too, as it would in production.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_filters",
    "steady_queue",
    "steady_queue_dashboard",
    "demo",
]
try:  # Django 5.2 runs on the django-tasks backport.
    import django.tasks  # noqa: F401
except ImportError:
    INSTALLED_APPS.append("django_tasks")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Project-level templates, including the override of the dashboard's base template.
        "DIRS": [REPO_ROOT / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DEMO_DATABASE", BASE_DIR / "db.sqlite3"),
        "OPTIONS": {
            # Take the write lock when a transaction starts and wait up to 20 s for it,
            # instead of failing with "database is locked" when a worker is writing.
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            # WAL lets readers (the dashboard) go on while a worker writes.
            "init_command": "PRAGMA journal_mode=WAL;",
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TASKS = {
    "default": {
        "BACKEND": "steady_queue.backend.SteadyQueueBackend",
        "QUEUES": ["default", "real_time", "reports", "background"],
    }
}

# What `manage.py steady_queue` runs: a worker that only serves the real_time queue,
# so that those jobs never wait behind slow ones, and one for the other queues, in order.
# The seed pauses "reports"; resuming it from the dashboard lets the second worker run them.
STEADY_QUEUE = Configuration.Options(
    workers=[
        Configuration.Worker(queues=["real_time"], threads=2),
        Configuration.Worker(queues=["default", "reports", "background"], threads=5),
    ],
)

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [REPO_ROOT / "static"]
# Serve straight from the finders: the demo works without running collectstatic.
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "/admin/login/"
LOGIN_REDIRECT_URL = "/jobs/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)-7s %(name)s: %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
    },
    "loggers": {
        "steady_queue": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # Django logs every task start and finish too; keep only its failures (with tracebacks).
        "django.tasks": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}
