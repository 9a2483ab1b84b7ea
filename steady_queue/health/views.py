"""``health_view``: the health check over HTTP, for load balancers and probes."""

from __future__ import annotations

import logging

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from ..ops import queues
from ..ops.durations import parse_duration
from .problems import HealthCheck, Problem

logger = logging.getLogger("steady_queue.health")
MAX_QUEUES = 20


@never_cache
@require_safe
def health_view(request: HttpRequest) -> JsonResponse:
    """Answer 200 when healthy, else 503; the JSON body names each problem.

    It shows problem names and their subject (a queue name, a process kind) only: no
    job, argument, host or error text, so it needs no login. ``?max_latency=5m`` checks
    queue latency too, ``?queue=NAME`` (repeatable) limits the checks to those queues.
    """
    try:
        check = _check_from(request)
    except ValueError as exc:
        return JsonResponse({"status": "error", "error": str(exc)}, status=400)
    try:
        problems = check.problems()
    except Exception:
        logger.exception("The health check failed")
        problems = [Problem("check_failed", "The health check itself failed.")]
    return JsonResponse(
        {
            "status": "failing" if problems else "ok",
            "problems": [problem.public() for problem in problems],
        },
        status=503 if problems else 200,
    )


def _check_from(request: HttpRequest) -> HealthCheck:
    max_latency = request.GET.get("max_latency")
    names = [queue for queue in request.GET.getlist("queue") if queue]
    # Anyone may ask: a bounded number of names, each costing at most two index look-ups.
    if len(names) > MAX_QUEUES:
        raise ValueError(f"At most {MAX_QUEUES} queue parameters.")
    for name in names:
        if not queues.exists(name):
            raise ValueError(f"Unknown queue {name!r}.")
    return HealthCheck(
        max_latency=parse_duration(max_latency) if max_latency else None,
        queues=names,
    )
