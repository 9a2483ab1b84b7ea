from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SteadyQueueDashboardConfig(AppConfig):
    name = "steady_queue_dashboard"
    verbose_name = _("Steady Queue dashboard")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the dashboard's system checks
