from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "demo"
    verbose_name = "Steady Queue demo"
    default_auto_field = "django.db.models.BigAutoField"
