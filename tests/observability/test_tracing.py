"""Tracing: a producer span per enqueue, a consumer span per run, linked through the job."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from steady_queue.backend import enqueue_all
from steady_queue.models import Job
from steady_queue.observability import tracing
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.tasks import acceptance
from tests.tasks import tracing as tracing_tasks

# The global provider can be set once per process: one for the module, emptied per test.
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
REQUEST = trace.get_tracer("tests.request")


@pytest.fixture(autouse=True)
def spans():
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def finished(kind: SpanKind) -> list:
    return [span for span in EXPORTER.get_finished_spans() if span.kind == kind]


def test_a_run_is_a_child_of_the_enqueue_in_the_request_that_made_it(db):
    with REQUEST.start_as_current_span("POST /orders") as request:
        result = tasks.add.using(queue_name="background").enqueue(2, 3)
    run_ready_jobs()

    (producer,) = finished(SpanKind.PRODUCER)
    (consumer,) = finished(SpanKind.CONSUMER)
    trace_id = request.get_span_context().trace_id
    assert producer.context.trace_id == consumer.context.trace_id == trace_id
    assert producer.parent.span_id == request.get_span_context().span_id
    assert consumer.parent.span_id == producer.context.span_id
    assert [link.context.span_id for link in consumer.links] == [producer.context.span_id]
    assert producer.name == "enqueue tests.tasks.add"
    assert dict(producer.attributes) == {
        "messaging.system": "steady_queue",
        "messaging.operation.type": "send",
        "messaging.destination.name": "background",
        "messaging.batch.message_count": 1,
        "messaging.message.id": result.id,
        "steady_queue.task": "tests.tasks.add",
    }
    assert dict(consumer.attributes) == {
        "messaging.system": "steady_queue",
        "messaging.operation.type": "process",
        "messaging.destination.name": "background",
        "messaging.message.id": result.id,
        "steady_queue.task": "tests.tasks.add",
        "steady_queue.attempt": 1,
        "steady_queue.outcome": "succeeded",
    }
    assert consumer.status.status_code == StatusCode.UNSET
    stored = Job.objects.get(pk=result.id).trace_context
    assert stored["traceparent"].split("-")[1] == f"{trace_id:032x}"


def test_spans_the_task_opens_are_children_of_its_run(db):
    tracing_tasks.opens_a_span.enqueue()
    run_ready_jobs()
    inner = next(s for s in EXPORTER.get_finished_spans() if s.name == "inside the task")
    (consumer,) = finished(SpanKind.CONSUMER)
    assert inner.parent.span_id == consumer.context.span_id


def test_a_failure_is_recorded_on_the_run_and_a_retry_says_so(db):
    acceptance.fail.enqueue("kaboom")
    acceptance.policy_in_decorator.enqueue()
    run_ready_jobs()
    runs = {span.attributes["steady_queue.task"]: span for span in finished(SpanKind.CONSUMER)}

    failed = runs["tests.tasks.acceptance.fail"]
    assert failed.attributes["steady_queue.outcome"] == "failed"
    assert failed.status.status_code == StatusCode.ERROR
    (event,) = failed.events
    assert event.name == "exception"
    assert event.attributes["exception.type"] == "ValueError"
    assert event.attributes["exception.message"] == "kaboom"

    retried = runs["tests.tasks.acceptance.policy_in_decorator"]
    assert retried.attributes["steady_queue.outcome"] == "retried"
    assert retried.attributes["steady_queue.attempt"] == 1


def test_a_bulk_enqueue_is_one_span_and_stays_constant_query(db):
    calls = [(tasks.add, [n, n], {}) for n in range(50)]
    with CaptureQueriesContext(connection) as traced, REQUEST.start_as_current_span("import"):
        enqueue_all(calls)
    (producer,) = finished(SpanKind.PRODUCER)
    assert producer.attributes["messaging.batch.message_count"] == 50
    contexts = set(Job.objects.values_list("trace_context__traceparent", flat=True))
    assert len(contexts) == 1 and None not in contexts
    with CaptureQueriesContext(connection) as untraced:
        enqueue_all(calls)
    assert len(traced) == len(untraced)


def test_without_an_sdk_nothing_is_stored(db, monkeypatch):
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)  # as if no SDK were configured
    monkeypatch.setattr(trace, "_PROXY_TRACER_PROVIDER", trace.ProxyTracerProvider())
    result = tasks.noop.enqueue()
    run_ready_jobs()
    assert Job.objects.get(pk=result.id).trace_context is None
    assert EXPORTER.get_finished_spans() == ()


def test_without_the_package_enqueue_and_run_work_untraced(db, monkeypatch):
    monkeypatch.setattr(tracing, "trace", None)
    with REQUEST.start_as_current_span("POST /orders"):
        result = tasks.add.enqueue(1, 1)
    [ran] = run_ready_jobs()
    assert ran.return_value == 2
    assert Job.objects.get(pk=result.id).trace_context is None
    assert [span.name for span in EXPORTER.get_finished_spans()] == ["POST /orders"]


def test_the_module_imports_without_opentelemetry():
    # A fresh interpreter where the package cannot be imported, as without the extra.
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from steady_queue.observability import tracing\n"
        "assert tracing.trace is None\n"
        "with tracing.enqueue_span([object()]): pass\n"
        "print('untraced')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "untraced"


def test_with_an_sdk_an_enqueue_outside_any_span_starts_a_trace_the_run_joins(db):
    result = tasks.noop.enqueue()
    run_ready_jobs()
    (producer,) = finished(SpanKind.PRODUCER)
    (consumer,) = finished(SpanKind.CONSUMER)
    assert producer.parent is None  # a root: no request around it
    assert consumer.context.trace_id == producer.context.trace_id
    assert Job.objects.get(pk=result.id).trace_context["traceparent"]
