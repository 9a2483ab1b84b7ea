"""Settings of the web servers the embedded tests start: the process tests' settings,
the process tests' fast configuration, and the steady_queue log on stderr."""

from tests.processes.configs import FAST
from tests.processes.settings import *  # noqa: F403

STEADY_QUEUE = FAST
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"steady_queue": {"handlers": ["stderr"], "level": "INFO"}},
}
