"""Settings of the supervisor the broken recurring task test starts: the processes
tests' own, plus an app declaring a broken and a healthy recurring task."""

from tests.processes.settings import *  # noqa: F403
from tests.processes.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.apps.broken_recurring_app"]
