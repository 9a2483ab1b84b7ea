"""Settings of a project that installed steady_queue but configured no TASKS backend."""

from tests.processes.settings import *  # noqa: F403

del TASKS  # noqa: F821
