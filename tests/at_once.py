"""Run claimed jobs on threads that start together: ends racing for the same rows."""

from __future__ import annotations

import threading

from django.db import connections

from steady_queue.perform import perform


def perform_at_once(claims: list) -> list[BaseException]:
    """Perform each claim on its own thread, all released at once; return their errors."""
    start = threading.Barrier(len(claims))
    errors: list[BaseException] = []

    def finish(claimed) -> None:
        try:
            start.wait(timeout=10)
            perform(claimed)
        except Exception as exc:  # returned: a thread's error must fail the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=finish, args=(claimed,)) for claimed in claims]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    if any(thread.is_alive() for thread in threads):
        errors.append(TimeoutError("a finishing thread did not end within 30 s"))
    return errors
