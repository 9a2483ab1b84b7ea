"""Run work on threads that start together: ends racing for the same rows."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections

from steady_queue.runner.perform import perform


def at_once(work: Callable[[Any], Any], items: Sequence) -> list[BaseException]:
    """Call ``work`` with each item on its own thread, all released at once; return errors."""
    start = threading.Barrier(len(items))
    errors: list[BaseException] = []

    def run(item) -> None:
        try:
            start.wait(timeout=10)
            work(item)
        except Exception as exc:  # returned: a thread's error must fail the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    if any(thread.is_alive() for thread in threads):
        errors.append(TimeoutError("a thread did not end within 30 s"))
    return errors


def perform_at_once(claims: list) -> list[BaseException]:
    """Perform each claim on its own thread, all released at once; return their errors."""
    return at_once(perform, claims)
