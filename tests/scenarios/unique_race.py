"""Enqueue one unique key per round from several processes at once.

Run by tests/processes/test_unique_race.py in spawned processes: each sets up Django
with the process tests' settings (the test database named in its environment), then
for every round waits for the others at a barrier and enqueues ``sync_account(round)``.
"""

from __future__ import annotations

import os
import traceback


def enqueue_rounds(environment: dict[str, str], rounds: int, barrier, results) -> None:
    """Put ``(pid, [result id of each round], None)``, or ``(pid, None, traceback)``."""
    os.environ.update(environment)
    try:
        import django

        django.setup()
        from tests.tasks import unique as tasks

        ids = []
        for number in range(rounds):
            barrier.wait(timeout=60)
            ids.append(tasks.sync_account.enqueue(number).id)
    except BaseException:
        barrier.abort()  # the others stop waiting for this process
        results.put((os.getpid(), None, traceback.format_exc()))
        return
    results.put((os.getpid(), ids, None))
