"""The errors a job gets when the process running it dies under it.

Outside ``steady_queue.processes`` so that the models can raise them without importing
the processes; ``steady_queue.processes`` exports them under their documented names.
"""

from __future__ import annotations

import os
import signal


class ProcessExitError(RuntimeError):
    """The process running the job exited before finishing it (killed, crashed or orphaned)."""

    # Stored as the job's error class: name it by its documented import path.
    __module__ = "steady_queue.processes"

    @classmethod
    def from_wait_status(cls, name: str, pid: int, status: int) -> ProcessExitError:
        """Describe how the child ``pid`` ended, from the status ``os.waitpid`` returned."""
        return cls(f"Process {name} (pid {pid}) {describe_wait_status(status)}")


class ProcessPrunedError(RuntimeError):
    """The process running the job stopped sending heartbeats and was pruned."""

    __module__ = "steady_queue.processes"


def describe_wait_status(status: int) -> str:
    """Say in words how a child ended: its exit status or the signal that killed it."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown signal"
        return f"was killed by signal {number} ({name})"
    if os.WIFEXITED(status):
        return f"exited with status {os.WEXITSTATUS(status)}"
    return f"ended with wait status {status}"
