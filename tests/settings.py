"""Settings for Steady Queue's own test suite.

``SQ_TEST_DB`` picks the database: ``sqlite`` (default), ``postgres`` or ``mysql``
(MySQL 8 / MariaDB). Servers are reached on 127.0.0.1 with the CI's credentials,
overridable through ``SQ_PG_*`` / ``SQ_MYSQL_*``.
"""

import os
import tempfile
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "steady-queue-tests"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]

DB = os.environ.get("SQ_TEST_DB", "sqlite")
# Process tests share the database with subprocesses, so SQLite must be a file.
SQLITE_DIR = Path(os.environ.get("SQ_SQLITE_DIR", tempfile.gettempdir()))
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


def _database() -> dict:
    if DB == "postgres":
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("SQ_PG_NAME", "steady_queue"),
            "USER": os.environ.get("SQ_PG_USER", "postgres"),
            "PASSWORD": os.environ.get("SQ_PG_PASSWORD", ""),
            "HOST": os.environ.get("SQ_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("SQ_PG_PORT", "5432"),
        }
    if DB == "mysql":
        return {
            "ENGINE": "django.db.backends.mysql",
            "NAME": os.environ.get("SQ_MYSQL_NAME", "steady_queue"),
            "USER": os.environ.get("SQ_MYSQL_USER", "root"),
            "PASSWORD": os.environ.get("SQ_MYSQL_PASSWORD", ""),
            "HOST": os.environ.get("SQ_MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("SQ_MYSQL_PORT", "3306"),
            "OPTIONS": {"charset": "utf8mb4", "isolation_level": "read committed"},
            "TEST": {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"},
        }
    if DB == "sqlite":
        path = SQLITE_DIR / f"steady_queue_test_{os.getpid()}_{WORKER}.sqlite3"
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            "TEST": {"NAME": str(path)},
        }
    raise RuntimeError(f"SQ_TEST_DB must be sqlite, postgres or mysql, not {DB!r}")


def _second_queue_database() -> dict:
    """A second queue database, for the "billing" backend (tests/*/test_queue_databases.py)."""
    second = _database()
    if DB == "sqlite":
        path = SQLITE_DIR / f"steady_queue_test_{os.getpid()}_{WORKER}_billing.sqlite3"
        second.update(NAME=str(path), TEST={"NAME": str(path)})
    else:
        second["NAME"] = f"{second['NAME']}_billing"
    return second


DATABASES = {"default": _database(), "billing": _second_queue_database()}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_filters",
    "steady_queue",
    "steady_queue_dashboard",
    "tests",
]
try:  # Django 5.2 runs on the django-tasks backport.
    import django.tasks  # noqa: F401
except ImportError:
    INSTALLED_APPS.append("django_tasks")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "tests.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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
STATIC_URL = "/static/"
LOGIN_URL = "/admin/login/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

TASKS = {
    "default": {
        "BACKEND": "steady_queue.backend.SteadyQueueBackend",
        "QUEUES": ["default", "real_time", "background", "low", "beta_one", "beta_two", "other"],
    },
    "secondary": {
        "BACKEND": "steady_queue.backend.SteadyQueueBackend",
        "QUEUES": [],
    },
    # Its jobs live in their own queue database.
    "billing": {
        "BACKEND": "steady_queue.backend.SteadyQueueBackend",
        "QUEUES": ["default"],
        "OPTIONS": {"database": "billing"},
    },
}

# Encrypted tasks (steady_queue.encryption; tests/encryption/): the newest key first.
STEADY_QUEUE_ENCRYPTION_KEYS = ["eRmLD2hdp0B-Bp6UrXNkyz3RSmpp7g9nFYeFNF06cFk="]
STEADY_QUEUE_ENCRYPT_TASKS = ["tests.tasks.encrypted.by_setting"]
