"""Run a queue for as long as an ASGI server runs the application (the lifespan protocol).

Django's ASGI handler does not implement lifespan (ticket #31508): this wrapper answers
the lifespan messages itself and passes every other scope (http, websocket) through.
The queue starts on ``lifespan.startup`` and stops gracefully on ``lifespan.shutdown``,
which uvicorn, daphne and hypercorn send when told to stop (SIGTERM, SIGINT).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .running import start

if TYPE_CHECKING:
    from ..configuration import Options

ASGIApp = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Any]


def lifespan(app: ASGIApp, options: Options | None = None) -> ASGIApp:
    """Wrap ``app`` so that a queue runs in the server's process from startup to shutdown."""

    async def application(scope, receive, send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        await _serve_lifespan(receive, send, options)

    return application


async def _serve_lifespan(receive, send, options) -> None:
    queue = None
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            try:
                queue = await asyncio.to_thread(start, options)
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if queue is not None:
                await asyncio.to_thread(queue.stop)
            await send({"type": "lifespan.shutdown.complete"})
            return
