"""Settings of the supervisors the feature process tests start: the processes tests' own,
plus an app with a recurring task for the scheduler to find."""

from tests.processes.settings import *  # noqa: F403
from tests.processes.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.apps.recurring_app"]
