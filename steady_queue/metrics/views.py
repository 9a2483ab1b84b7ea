"""``metrics_view``: the Prometheus text for a scraper with the token, or a staff user."""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .. import db, ours

logger = logging.getLogger("steady_queue.metrics")


@never_cache
@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Answer the metrics, 401 without credentials, 503 when the database is unreachable.

    Allowed: ``Authorization: Bearer <STEADY_QUEUE_METRICS_TOKEN>`` when that setting
    is set, or a logged-in staff user. The format follows the scraper's Accept header
    (Prometheus text or OpenMetrics), as prometheus_client negotiates it.
    ``?backend=ALIAS`` reads that TASKS backend's own queue database (404 if none).
    """
    try:
        from prometheus_client import CollectorRegistry
        from prometheus_client.exposition import choose_encoder

        from .collector import QueueCollector
    except ImportError as exc:
        raise ImproperlyConfigured(
            "steady_queue.metrics needs prometheus_client: install the prometheus-client "
            "package (it is Steady Queue's [prometheus] extra; install that from the "
            "project's checkout, not as steady-queue from the package index)"
        ) from exc
    if not _allowed(request):
        response = HttpResponse("Unauthorized\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="steady_queue metrics"'
        return response
    try:
        database = _database(request.GET.get("backend"))
    except LookupError as exc:
        return HttpResponse(f"{exc}\n", status=404, content_type="text/plain")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector())
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    try:
        with db.using_alias(database):
            body = encoder(registry)
    except DatabaseError:
        logger.exception("Could not read the metrics from the queue database")
        return HttpResponse(
            "The queue database is unreachable.\n", status=503, content_type="text/plain"
        )
    return HttpResponse(body, content_type=content_type)


def _database(backend: str | None) -> str | None:
    """The queue database of TASKS ``backend`` (``?backend=``); None: steady_queue.database."""
    if not backend:
        return None
    from ..compat import task_backends

    try:
        found = task_backends[backend]
    except ImproperlyConfigured:
        found = None
    if not ours.is_ours(found):
        raise LookupError(f"No Steady Queue backend {backend!r} in TASKS.")
    return found.database


def _allowed(request: HttpRequest) -> bool:
    token = getattr(settings, "STEADY_QUEUE_METRICS_TOKEN", None)
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and given:
        # Constant time: a scraper's token must not leak through response timing.
        return hmac.compare_digest(given.strip().encode(), str(token).encode())
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_staff)
