"""Tasks of the acceptance suite, written as a user following the docs would write them.

In-process tests read what the tasks saw from ``SEEN`` (reset by the conftest);
tasks run by real worker processes append lines to a file instead.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

from steady_queue.context import areport_progress, report_progress, reschedule
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.retries import RetryPolicy, retry_policy
from tests.acceptance.api import task

# What in-process runs saw: (task name, payload) in run order.
SEEN: list[tuple[str, object]] = []


def seen(name: str) -> list:
    return [payload for task_name, payload in SEEN if task_name == name]


# --- "Define and enqueue tasks" -------------------------------------------------------


@task()
def send_welcome_email(user_id: int) -> str:
    SEEN.append(("send_welcome_email", user_id))
    return "sent"


@task(priority=10, queue_name="real_time")
def send_receipt(order_id: int):
    SEEN.append(("send_receipt", order_id))


@task()
def record(label):
    SEEN.append(("record", label))
    return label


@task()
def receive(*args, **kwargs):
    SEEN.append(("receive", (args, kwargs)))
    return None


@task()
def fail(message="boom"):
    raise ValueError(message)


@task()
def returns(value):
    return value


@task()
async def async_double(value):
    return value * 2


@task(takes_context=True)
def with_context(context, value):
    SEEN.append(("with_context", (context.attempt, context.task_result.id)))
    return value


@task()
def enqueue_more(count):
    for index in range(count):
        record.enqueue(f"child-{index}")
    return count


@task(takes_context=True)
def look_at_myself(context):
    """Read this job's own result, by id, while it runs."""
    result = look_at_myself.get_result(context.task_result.id)
    SEEN.append(("look_at_myself", (result.status, result.started_at, list(result.worker_ids))))


@task(backend="secondary")
def on_secondary(value):
    return value


# --- Concurrency ------------------------------------------------------------------------


# The docs' example (docs/reference/concurrency.md), keyed by a column of the test models
# (they have no account_id).
@limits_concurrency(key=lambda contact: contact.name, to=2, duration=timedelta(minutes=5))
@task()
def deliver_announcement(contact):
    SEEN.append(("deliver_announcement", contact.pk))


@limits_concurrency(key=lambda name: name)
@task()
def one_at_a_time(name):
    SEEN.append(("one_at_a_time", name))
    return name


@limits_concurrency(key=lambda name: name)
@task()
def one_at_a_time_failing(name):
    raise ValueError(name)


@limits_concurrency(key="singleton", on_conflict="discard")
@task()
def unique_while_queued(value):
    SEEN.append(("unique_while_queued", value))


@limits_concurrency(key=lambda contact_id: contact_id, group="contacts")
@task()
def contact_a(contact_id):
    SEEN.append(("contact_a", contact_id))


@limits_concurrency(key=lambda contact_id: contact_id, group="contacts")
@task()
def contact_b(contact_id):
    SEEN.append(("contact_b", contact_id))


@limits_concurrency(key=lambda account: account)
@task()
def keyed_by_model(account):
    SEEN.append(("keyed_by_model", account.pk))


@limits_concurrency(key="interval", to=1)
@task()
def timed_interval(log_path: str, seconds: float):
    start = time.time()
    time.sleep(seconds)
    append(log_path, f"interval {start} {time.time()} {os.getpid()}")


# --- Retries ---------------------------------------------------------------------------


@retry_policy(attempts=3, base_delay=timedelta(seconds=10), backoff=2.0, jitter=0)
@task(takes_context=True)
def flaky(context, failures):
    SEEN.append(("flaky", context.attempt))
    if context.attempt <= failures:
        raise ConnectionError(f"attempt {context.attempt}")
    return context.attempt


@retry_policy(
    attempts=5,
    base_delay=timedelta(seconds=10),
    backoff=2.0,
    max_delay=timedelta(minutes=10),
    jitter=0.15,
    retry_on=(ConnectionError, TimeoutError),
    discard_on=(PermissionError,),
    max_age=timedelta(hours=1),
)
@task()
def fetch_rates(currency):
    SEEN.append(("fetch_rates", currency))
    if currency == "denied":
        raise PermissionError("no access")
    if currency == "bug":
        raise KeyError(currency)
    raise ConnectionError(currency)


@retry_policy(attempts=10, base_delay=timedelta(minutes=30), jitter=0, max_age=timedelta(hours=1))
@task()
def old_and_flaky():
    raise ConnectionError("again")


@task(retry=RetryPolicy(attempts=2, base_delay=timedelta(seconds=1), jitter=0))
def policy_in_decorator():
    raise ConnectionError("once more")


@retry_policy(attempts=2, base_delay=timedelta(0), jitter=0)
@limits_concurrency(key="retried-limited")
@task()
def limited_and_flaky(label):
    SEEN.append(("limited_and_flaky", label))
    raise ConnectionError(label)


# --- Context API -------------------------------------------------------------------------


@task(takes_context=True)
def import_file(context, total):
    from steady_queue.models import Job

    for done in range(1, total + 1):
        report_progress(context, done, total, f"Imported row {done}")
        # What another connection (the dashboard, say) sees right now.
        SEEN.append(("import_file", read_from_another_connection(Job, context.task_result.id)))
    return total


@task(takes_context=True)
async def async_progress(context):
    await areport_progress(context, 1, 2, "half")
    return "ok"


@task(takes_context=True)
def wait_for_upload(context, marker):
    SEEN.append(("wait_for_upload", context.attempt))
    if not Path(marker).exists():
        try:
            reschedule(context, timedelta(minutes=5))
        except Exception:  # a user's broad handler must not swallow the reschedule
            SEEN.append(("wait_for_upload", "swallowed"))
    return "uploaded"


@limits_concurrency(key="upload")
@task(takes_context=True)
def limited_wait(context, marker):
    if not Path(marker).exists():
        reschedule(context, timedelta(minutes=5))
    return "done"


# --- Operations API ------------------------------------------------------------------------


@task(takes_context=True)
def discard_myself(context):
    from steady_queue.exceptions import JobStateError
    from steady_queue.models import Job

    try:
        Job.objects.get(pk=context.task_result.id).discard()
    except JobStateError as exc:
        SEEN.append(("discard_myself", str(exc)))


# --- Processes -----------------------------------------------------------------------------


def append(log_path: str, line: str) -> None:
    with open(log_path, "a") as log:
        log.write(f"{line}\n")


@task()
def write_line(log_path: str, label: str) -> str:
    append(log_path, f"run {label} {os.getpid()}")
    return label


@task()
def hold_until(log_path: str, label: str, release_path: str) -> str:
    """Run until ``release_path`` exists (at most a minute)."""
    append(log_path, f"start {label} {os.getpid()}")
    deadline = time.monotonic() + 60
    while not Path(release_path).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    append(log_path, f"end {label} {os.getpid()}")
    return label


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0, at_least_once=True)
@task()
def hold_safely(log_path: str, label: str, release_path: str) -> str:
    return hold_until.call(log_path, label, release_path)


def read_from_another_connection(model, pk):
    """Read ``model`` row ``pk`` on a fresh connection in another thread."""
    import threading

    from django.db import connections

    found = {}

    def read():
        try:
            found["value"] = model.objects.get(pk=pk).progress
        finally:
            connections.close_all()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    return found.get("value")


@retry_policy(attempts=2, base_delay=timedelta(0), min_delay=timedelta(seconds=5), jitter=0)
@task()
def retried_after_min_delay():
    raise ConnectionError("soon")


@retry_policy(
    attempts=5, base_delay=timedelta(minutes=50), max_delay=timedelta(minutes=1), jitter=0
)
@task()
def retried_within_max_delay():
    raise ConnectionError("capped")


@task()
def returns_a_set():
    return {1, 2}


@limits_concurrency(key="short", duration=timedelta(seconds=1))
@task()
def briefly_limited(label):
    return label


@task()
def returns_nan():
    return float("nan")


@task(takes_context=True)
def reschedule_forever(context, marker, limit):
    """Reschedule itself; after ``limit`` runs it gives up (so that a bug cannot hang tests)."""
    SEEN.append(("reschedule_forever", context.attempt))
    if len(seen("reschedule_forever")) < limit:
        reschedule(context, timedelta(minutes=1))
    return "gave up"


@retry_policy(attempts=3, base_delay=timedelta(0), jitter=0)
@task()
def hold_with_policy(log_path: str, label: str, release_path: str) -> str:
    """Retried on errors, but not after a crash: at_least_once is off."""
    return hold_until.call(log_path, label, release_path)
