from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SteadyQueueDashboardConfig(AppConfig):
    name = "steady_queue_dashboard"
    verbose_name = _("Steady Queue dashboard")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the dashboard's system checks, and the receiver that writes the
        # command line's operations into the audit log.
        from . import audit, checks  # noqa: F401
