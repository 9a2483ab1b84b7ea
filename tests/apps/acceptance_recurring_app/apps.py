from django.apps import AppConfig


class AcceptanceRecurringConfig(AppConfig):
    # Its own label: tests/apps/recurring_app has an app of the same module name.
    name = "tests.apps.acceptance_recurring_app"
    label = "acceptance_recurring"
