"""Settings of processes that reach PostgreSQL through PgBouncer in transaction mode.

What "Behind PgBouncer" (docs/explanation/scaling.md) tells users to set: psycopg prepares no
statement (``prepare_threshold: None``), no server-side cursors, and LISTEN on a
direct connection (``steady_queue.listen_database``).
"""

import os

import steady_queue
from tests.acceptance.process_settings import *  # noqa: F403
from tests.acceptance.process_settings import DATABASES

direct = dict(DATABASES["default"])
DATABASES["default"] = {
    **direct,
    "PORT": os.environ["SQ_PGBOUNCER_PORT"],
    "OPTIONS": {**direct.get("OPTIONS", {}), "prepare_threshold": None},
    "DISABLE_SERVER_SIDE_CURSORS": True,
}
DATABASES["direct"] = {**direct, "TEST": {"MIRROR": "default"}}
if os.environ.get("SQ_PGBOUNCER_LISTEN", "direct") == "direct":
    steady_queue.listen_database = "direct"
