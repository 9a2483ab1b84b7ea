"""MySQL/MariaDB's fast storage: one round trip (a script) per enqueue, claim and finish.

``storage`` holds the storage class; ``script`` runs a transaction in one round trip;
the statements are the other modules': the finish and claim (``statements``), enqueue
(``enqueue``), threads' finishes written together (``grouped``), and a limited job's
finish handing its slot on (``hand_on``).
"""

from .statements import PICKED, TAKEN
from .storage import MysqlStorage

__all__ = ["PICKED", "TAKEN", "MysqlStorage"]
