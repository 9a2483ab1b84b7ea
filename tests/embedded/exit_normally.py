"""``python -m tests.embedded.exit_normally PATH``: start a queue, return once PATH exists.

The interpreter then exits without calling ``stop()``: its exit stops the queue.
"""

import sys
import time
from pathlib import Path

import django

if __name__ == "__main__":
    django.setup()
    from steady_queue.embedded import start

    start()
    deadline = time.monotonic() + 60
    while not Path(sys.argv[1]).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
