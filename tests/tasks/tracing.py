"""A task that opens a span of its own (tests/observability/test_tracing.py)."""

from opentelemetry import trace

from steady_queue.compat import task


@task()
def opens_a_span() -> str:
    with trace.get_tracer("tests.task").start_as_current_span("inside the task"):
        return "done"
