"""bench/observability.py: the benchmark's settings, with the dashboard and the metrics view.

django-tasks-db is left out: nothing here compares with it. Used by bench/scale.py too.
"""

from bench.settings import *  # noqa: F403
from bench.settings import INSTALLED_APPS, TASKS

TASKS = {"default": TASKS["default"]}

INSTALLED_APPS = [
    # Nor the bench app: its tasks module declares django-tasks-db's task.
    *(app for app in INSTALLED_APPS if app not in ("django_tasks_db", "bench")),
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_htmx",
    "django_filters",
    "steady_queue_dashboard",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
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
ROOT_URLCONF = "bench.observability_urls"
ALLOWED_HOSTS = ["*"]
STEADY_QUEUE_METRICS_TOKEN = "bench"
