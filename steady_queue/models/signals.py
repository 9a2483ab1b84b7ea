"""What the models announce for the storage layer to deliver (NOTIFY on PostgreSQL).

The models sit below the storage and never import it: a state change that makes jobs
ready or scheduled, or ends them, sends one of these inside its transaction, and the
storage of the queue database turns it into a wake-up (``steady_queue.storage.notify``),
delivered when the transaction commits. On databases without NOTIFY nobody listens.
"""

from django.dispatch import Signal

#: Jobs of ``queue_names`` became ready.
jobs_ready = Signal()
#: A job becomes due at ``due_at``.
jobs_scheduled = Signal()
#: The jobs of ``job_ids`` ended: succeeded, failed for good (cancelled too) or deleted.
jobs_ended = Signal()
