"""The supervisor and the processes it forks: workers, dispatchers and the scheduler.

Only the errors are imported here, so that models can use them without loading the
process machinery; import the processes from their modules.
"""

from .errors import ProcessExitError, ProcessPrunedError

__all__ = ["ProcessExitError", "ProcessPrunedError"]
