"""Steady Queue inside the web server: the same engine as ``manage.py steady_queue --mode
async`` (a supervisor and its children as threads), started and stopped by the server.

- ASGI: ``application = steady_queue.embedded.lifespan(get_asgi_application())``;
- Gunicorn: ``gunicorn -c python:steady_queue.embedded.gunicorn app.wsgi`` (one queue
  per Gunicorn master, in a process of its own: ``queue_process``);
- anywhere: ``queue = steady_queue.embedded.start()`` … ``queue.stop()``.

``steady_queue.embedded_processes`` says what runs embedded (all, or workers only).
Importing this package loads no model: Gunicorn's master imports it before Django is set up.
"""

from ..exceptions import EmbeddedQueueAlreadyRunning
from .asgi import lifespan
from .running import EmbeddedQueue, start

__all__ = ["EmbeddedQueue", "EmbeddedQueueAlreadyRunning", "lifespan", "start"]
