"""SQLite's fast storage: each hot path one ``BEGIN IMMEDIATE`` write transaction.

``storage`` holds the storage class; ``transaction`` the write transactions; the
statements are the other modules': a success (``success``), the claim (``claim``),
enqueue (``enqueue``, its rows' values by ``values``), threads' finishes written
together (``grouped``), and a limited job's finish handing its slot on (``hand_on``).
"""

from .storage import SqliteStorage
from .success import finish_job, record_success
from .success import values as success_values
from .transaction import MIN_VERSION, available, write_transaction

__all__ = [
    "MIN_VERSION",
    "SqliteStorage",
    "available",
    "finish_job",
    "record_success",
    "success_values",
    "write_transaction",
]
