"""The worker process and what it alone uses: its pool of threads, its event loop for
async jobs (``async_slots``, ``async_claims``), the ledger of its claims, recycling, the
checks of its running jobs (``run_checks``) and ending jobs whose outcome was not
recorded (``unrecorded``)."""

from .process import Worker

__all__ = ["Worker"]
