"""PostgreSQL's fast storage: one statement per enqueue, claim and finish; NOTIFY wake-ups.

``storage`` holds the storage class; the statements are the other modules': the finish
and claim CTEs (``statements``), enqueue (``enqueue``), threads' finishes written
together (``grouped``), a limited job's finish handing its slot on (``hand_on``), and
the prepared cursor they all run on (``cursor``).
"""

from .storage import PostgresStorage

__all__ = ["PostgresStorage"]
