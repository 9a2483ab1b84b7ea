from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SteadyQueueConfig(AppConfig):
    name = "steady_queue"
    verbose_name = _("Steady Queue")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, log  # noqa: F401  (registers checks and log receivers)
