"""A task module that takes its time to import (tests/task_options/test_transactional.py)."""

import time

from steady_queue.compat import task
from steady_queue.task_options.transactional import transactional

time.sleep(0.5)  # a second thread asks for its options meanwhile


@transactional
@task()
def declared_late() -> None:
    pass
