"""Gunicorn server hooks that run one Steady Queue per master (``queue_process``).

Use them as the configuration (``gunicorn -c python:steady_queue.embedded.gunicorn
app.wsgi``) or import them into your own::

    from steady_queue.embedded.gunicorn import on_exit, on_reload, when_ready

``when_ready`` starts the queue process before the first worker; ``on_reload`` (HUP)
starts a fresh one, which loads the new code, and stops the old one gracefully (it
finishes its running jobs meanwhile, beside the new one); ``on_exit`` stops it
gracefully and waits.

Only hook names are defined here: Gunicorn reads every setting of this module.
"""

from __future__ import annotations

import signal as _signal
from datetime import timedelta as _timedelta

from .queue_process import QueueProcess as _QueueProcess

# Beyond steady_queue.shutdown_timeout: the supervisor's QUIT_TIMEOUT and a margin.
_QUIT_MARGIN = 15.0
_current: dict[int, _QueueProcess] = {}  # master pid -> its queue process


def when_ready(server) -> None:
    """Start the queue process (Gunicorn calls this once the master is ready)."""
    _current[server.pid] = _QueueProcess.fork(server)


def on_reload(server) -> None:
    """HUP: a new queue process for the new code; the old one stops gracefully."""
    old = _current.pop(server.pid, None)
    _current[server.pid] = _QueueProcess.fork(server)
    if old is not None:
        old.signal(_signal.SIGTERM)  # reaped by the master when it exits


def on_exit(server) -> None:
    """Stop the queue process gracefully and wait for it (the master is exiting)."""
    import steady_queue

    queue = _current.pop(server.pid, None)
    if queue is None:
        return
    grace = steady_queue.shutdown_timeout
    seconds = grace.total_seconds() if isinstance(grace, _timedelta) else float(grace)
    if not queue.stop(seconds + _QUIT_MARGIN):
        server.log.error("Steady Queue's embedded queue did not stop in time: killed")
