from django.apps import AppConfig


class AcceptanceRecurringConfig(AppConfig):
    # Its own label: tests/features has an app of the same module name.
    name = "tests.acceptance.recurring_app"
    label = "acceptance_recurring"
