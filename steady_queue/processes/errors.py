"""The errors a job gets when the process running it dies under it (defined in exceptions)."""

from ..exceptions import ProcessExitError, ProcessPrunedError, describe_wait_status

__all__ = ["ProcessExitError", "ProcessPrunedError", "describe_wait_status"]
