"""Tasks of the process tests of async mode, whose workers are threads of one process."""

from __future__ import annotations

import ctypes
import os
import threading

from steady_queue.compat import task
from tests.tasks.processes import append


class WorkerLoopCrash(BaseException):
    """Raised in a worker's main loop: no ``except Exception`` there catches it."""


@task()
def crash_my_worker(log_path: str, label: str) -> str:
    """Raise ``WorkerLoopCrash`` in the loop of the worker running this job, then return.

    A pool thread is named ``<worker name>-<index>``; the worker's loop runs in the
    thread named after the worker (``processes.threads``).
    """
    worker_name = threading.current_thread().name.rsplit("-", 1)[0]
    [loop] = [thread for thread in threading.enumerate() if thread.name == worker_name]
    done = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(loop.ident), ctypes.py_object(WorkerLoopCrash)
    )
    assert done == 1, done
    append(log_path, f"run {label} {os.getpid()}")
    return worker_name
