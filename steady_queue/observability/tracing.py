"""OpenTelemetry spans for enqueues and runs, linked through the job (``steady-queue[otel]``).

An enqueue opens a PRODUCER span and stores its W3C trace context with each job
(``Job.trace_context``); the run opens a CONSUMER span whose parent is that context,
with a link to it too, so an APM shows the run under the request that enqueued it.
Only ``opentelemetry-api`` is used: the application chooses the SDK and exporter.
Without the package every function here is a no-op that costs one ``is None`` test;
with it but no SDK configured, the API's non-recording spans inject nothing, and
``trace_context`` stays NULL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import Link, SpanKind, StatusCode
except ImportError:  # the extra is not installed
    trace = None

if TYPE_CHECKING:
    from ..models import Job

SYSTEM = "steady_queue"


class Run:
    """The consumer span of one run: ``failed(exc)`` records an exception, ``ended`` the outcome."""

    def __init__(self, span=None):
        self.span = span

    def failed(self, exc: BaseException) -> None:
        if self.span is not None:
            self.span.record_exception(exc)
            self.span.set_status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}")

    def ended(self, outcome: str) -> None:
        """``succeeded``, ``failed``, ``retried``, ``rescheduled``, ``throttled`` or ``lost``."""
        if self.span is not None:
            self.span.set_attribute("steady_queue.outcome", outcome)


NOT_TRACED = Run()


@contextlib.contextmanager
def enqueue_span(jobs: Sequence[Job]) -> Iterator[None]:
    """A producer span around storing ``jobs``; each job carries its context."""
    if trace is None or not jobs:
        yield
        return
    first, tasks = jobs[0], {job.task_path for job in jobs}
    name = f"enqueue {first.task_path}" if len(tasks) == 1 else "enqueue (several tasks)"
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.destination.name": first.queue_name,
        "messaging.batch.message_count": len(jobs),
    }
    if len(tasks) == 1:
        attributes["steady_queue.task"] = first.task_path
    tracer = trace.get_tracer(__name__)
    with tracer.start_as_current_span(name, kind=SpanKind.PRODUCER, attributes=attributes) as span:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        for job in jobs:  # the same dict for all: it is serialized, never changed
            job.trace_context = carrier or None
        yield
        # A duplicate of a @unique task was not stored: it has no id of its own.
        if len(jobs) == 1 and first.pk is not None and span.is_recording():
            span.set_attribute("messaging.message.id", str(first.pk))


@contextlib.contextmanager
def run_span(job: Job) -> Iterator[Run]:
    """A consumer span, current while the task runs, child of the span that enqueued it."""
    if trace is None:
        yield NOT_TRACED
        return
    parent = propagate.extract(job.trace_context) if job.trace_context else None
    producer = trace.get_current_span(parent).get_span_context() if parent else None
    links = [Link(producer)] if producer is not None and producer.is_valid else []
    attributes = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.destination.name": job.queue_name,
        "messaging.message.id": str(job.pk),
        "steady_queue.task": job.task_path,
        "steady_queue.attempt": len(job.attempts) + 1,
    }
    tracer = trace.get_tracer(__name__)
    with tracer.start_as_current_span(
        f"run {job.task_path}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=attributes,
        links=links,
        # The run records the task's exception itself; what escapes is the worker's.
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield Run(span)
