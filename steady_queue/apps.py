from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SteadyQueueConfig(AppConfig):
    name = "steady_queue"
    verbose_name = _("Steady Queue")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported for their side effects: system checks, the receivers that log each
        # job's start and end and announce jobs a crash failed (results), and the one
        # that sends NOTIFY wake-ups.
        from . import checks, results  # noqa: F401
        from .storage import notify  # noqa: F401
