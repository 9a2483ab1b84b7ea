"""Settings of processes that use Django's built-in connection pool (psycopg_pool)."""

from tests.acceptance.process_settings import *  # noqa: F403
from tests.acceptance.process_settings import DATABASES

# Three worker threads need five connections (they, polling and the heartbeat): the
# configuration check asks for at least that; more leaves room for the listener.
DATABASES["default"]["OPTIONS"] = {
    **DATABASES["default"].get("OPTIONS", {}),
    "pool": {"min_size": 1, "max_size": 8, "timeout": 10},
}
