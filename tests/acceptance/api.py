"""The names the docs tell users to import: from ``django.tasks`` on Django 6,
from the ``django_tasks`` backport on Django 5.2."""

try:
    from django.tasks import TaskResult, TaskResultStatus, default_task_backend, task
    from django.tasks.base import TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
    from django.tasks.signals import task_enqueued, task_finished, task_started

    BACKPORT = False
except ImportError:
    from django_tasks import TaskResult, TaskResultStatus, default_task_backend, task
    from django_tasks.base import TaskError
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started

    BACKPORT = True

__all__ = [
    "BACKPORT",
    "InvalidTask",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "default_task_backend",
    "task",
    "task_enqueued",
    "task_finished",
    "task_started",
]
