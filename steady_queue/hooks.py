"""Lifecycle hooks: run your code when the supervisor or one of its processes starts or stops.

Register hooks where your code loads before the processes fork (``settings.py`` or an
``AppConfig.ready()``)::

    from steady_queue import hooks

    @hooks.on_worker_start
    def warm_caches(worker):
        ...

Each hook receives the process object (``Supervisor``, ``Worker``, ``Dispatcher`` or
``Scheduler``), which has ``name``, ``kind`` and ``metadata()``. A hook that raises is
logged and does not stop the process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("steady_queue.hooks")

Hook = Callable[[Any], object]

# (process kind, event) -> hooks, in registration order.
_hooks: dict[tuple[str, str], list[Hook]] = {}


def _register(kind: str, event: str) -> Callable[[Hook], Hook]:
    def register(hook: Hook) -> Hook:
        _hooks.setdefault((kind, event), []).append(hook)
        return hook

    register.__name__ = f"on_{kind.lower()}_{event}"
    register.__doc__ = f"Call ``hook(process)`` when a {kind.lower()} {event}s (decorator)."
    return register


on_start = _register("Supervisor", "start")
on_stop = _register("Supervisor", "stop")
on_worker_start = _register("Worker", "start")
on_worker_stop = _register("Worker", "stop")
on_dispatcher_start = _register("Dispatcher", "start")
on_dispatcher_stop = _register("Dispatcher", "stop")
on_scheduler_start = _register("Scheduler", "start")
on_scheduler_stop = _register("Scheduler", "stop")


def run(event: str, process: Any) -> None:
    """Call the ``event`` ("start" or "stop") hooks registered for ``process.kind``."""
    for hook in _hooks.get((process.kind, event), []):
        try:
            hook(process)
        except Exception:
            logger.exception("The %s %s hook %r failed", process.kind.lower(), event, hook)


def clear() -> None:
    """Forget every registered hook."""
    _hooks.clear()
