"""Demo tasks, one per Steady Queue feature. ``manage.py seed_demo`` enqueues them all."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from datetime import date, datetime, timedelta
from decimal import Decimal
from uuid import UUID

try:
    from django.tasks import task
except ImportError:  # Django 5.2 with the django-tasks backport
    from django_tasks import task

from steady_queue.cleanup import clear_finished_jobs
from steady_queue.context import report_progress
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.rate_limits import rate_limit
from steady_queue.task_options.recurring_task import recurring
from steady_queue.task_options.retries import retry_policy
from steady_queue.task_options.uniqueness import unique
from steady_queue_dashboard.masking import masked_arguments

from .models import Customer


class PaymentDeclined(Exception):
    """The made-up payment gateway said no."""


class ServiceTimeout(Exception):
    """The made-up flaky service did not answer in time."""


class ReportTemplateMissing(LookupError):
    """A report was asked for with a template that does not exist."""


REPORT_TEMPLATES = {"daily sales", "weekly signups", "monthly invoices"}


@task()
def say_hello(name: str) -> str:
    """Quick: finishes at once and stores its return value."""
    return f"Hello, {name}!"


@task(queue_name="background", takes_context=True)
def crunch_numbers(context, steps: int = 20, step_seconds: float = 1.0) -> int:
    """Slow: works for a while, reports its progress and logs after every step.

    Its job page shows its log lines as it writes them, and its live stack.
    """
    total = 0
    for step in range(1, steps + 1):
        time.sleep(step_seconds)
        total += step * step
        report_progress(context, step, steps, f"Crunched {step} of {steps} blocks")
        logging.getLogger(__name__).info("Block %d of %d: running total %d", step, steps, total)
    return total


@masked_arguments("card_number")  # the dashboard shows it as [masked]
@task(priority=5)
def charge_card(card_number: str, amount: Decimal) -> None:
    """Always fails, a few frames deep, so that the dashboard has a traceback to show."""
    _submit_to_gateway(card_number, amount)


@retry_policy(attempts=4, base_delay=timedelta(seconds=2), retry_on=(ServiceTimeout,))
@task()
def call_flaky_service(failure_rate: float = 0.5) -> str:
    """Flaky: fails at random; its retry policy runs it again with exponential backoff."""
    if random.random() < failure_rate:
        raise ServiceTimeout("The inventory service did not answer within 2 seconds.")
    return "The inventory service answered."


@limits_concurrency(key=lambda account_id, seconds=3.0: account_id, to=1)
@task(queue_name="background")
def sync_account(account_id: int, seconds: float = 3.0) -> str:
    """Concurrency-limited: one sync per account at a time; the others wait, blocked."""
    time.sleep(seconds)
    return f"Account {account_id} synchronised."


@unique(key=lambda customer_id: customer_id, period=timedelta(minutes=10))
@task(queue_name="background")
def refresh_customer_stats(customer_id: int) -> str:
    """Unique: one refresh per customer every ten minutes; enqueueing again returns that job."""
    time.sleep(1.0)
    return f"Statistics of customer {customer_id} refreshed."


@rate_limit(to=2, per=timedelta(minutes=1), key=lambda partner, order_id: partner)
@task(queue_name="background")
def notify_partner(partner: str, order_id: int) -> str:
    """Rate limited: two calls a minute per partner; the others wait, throttled."""
    return f"{partner} told about order {order_id}."


@task(queue_name="reports", takes_context=True)
def build_report(context, name: str, pages: int = 12) -> str:
    """Paused queue: the demo pauses "reports", so these wait until you resume it."""
    if name not in REPORT_TEMPLATES:
        raise ReportTemplateMissing(f"No report template named {name!r}.")
    for page in range(1, pages + 1):
        time.sleep(1.0)
        report_progress(context, page, pages, f"Rendered page {page} of {pages}")
    return f"Report {name!r}: {pages} pages."


@task(queue_name="real_time", priority=10)
def send_invoice(
    customer: Customer,
    amount: Decimal,
    due_on: date,
    sent_at: datetime,
    reference: UUID,
    grace: timedelta,
) -> str:
    """Rich arguments: a model instance (fetched again at run time) and non-JSON types."""
    return (
        f"Invoice {reference} for {amount} sent to {customer.email} at {sent_at:%H:%M}, "
        f"due on {due_on:%Y-%m-%d} with {grace.days} days of grace."
    )


@task()
async def check_inventory(sku: str) -> dict:
    """Async: the worker runs the coroutine to completion."""
    await asyncio.sleep(0.2)
    return {"sku": sku, "in_stock": sum(map(ord, sku)) % 7}


@task(takes_context=True)
def describe_attempt(context, label: str) -> dict:
    """takes_context: reads its own result id and attempt number."""
    return {"label": label, "result_id": context.task_result.id, "attempt": context.attempt}


@recurring(schedule="*/5 * * * *", key="demo.heartbeat", description="Every five minutes")
@recurring(schedule="0 6 * * *", key="demo.morning-report", kwargs={"name": "morning report"})
@task(queue_name="real_time")
def recurring_hello(name: str = "scheduler") -> str:
    """Recurring: the scheduler enqueues it on its cron schedules."""
    return f"Hello from the {name}!"


@recurring(
    schedule="* * * * *",
    key="demo.keep-busy",
    description="Every minute: a few new jobs, so that every screen keeps something to show",
)
@task()
def keep_busy() -> int:
    """Recurring: enqueues the home page's batch (running, blocked, failing, scheduled jobs)."""
    from .seeding import enqueue_batch  # seeding imports this module

    return enqueue_batch()


# The built-in cleanup, on a schedule: jobs finished more than a day ago are deleted.
recurring(schedule="0 * * * *", key="demo.clear-finished-jobs")(clear_finished_jobs)


def _submit_to_gateway(card_number: str, amount: Decimal) -> None:
    _raise_declined(card_number[-4:], amount)


def _raise_declined(last_digits: str, amount: Decimal) -> None:
    raise PaymentDeclined(f"Card ending {last_digits} was declined for {amount}.")


@task(queue_name="background")
def import_order_row(row: int) -> int:
    """One row of a batch import; a negative row is malformed and fails."""
    if row < 0:
        raise ValueError(f"row {row} is malformed")
    time.sleep(0.2)
    return row


@task()
def summarise_import(batch_id: int) -> str:
    """A batch's callback: called with the batch's id once every row has ended."""
    from steady_queue.batches import Batch

    progress = Batch.objects.get(pk=batch_id).progress
    return f"{progress.succeeded} rows imported, {progress.failed} failed"


@task()
def extract_sales(day: str) -> dict:
    return {"day": day, "orders": random.randint(50, 150)}


@task(takes_context=True)
def transform_sales(context, day: str) -> int:
    from steady_queue.workflows import upstream_results

    return upstream_results(context)["extract_sales"]["orders"] * 3


@task(takes_context=True)
def load_sales(context, day: str, fail: bool = False) -> int:
    from steady_queue.workflows import upstream_results

    if fail:
        raise ConnectionError("the warehouse refused the load")
    return upstream_results(context)["transform_sales"]


@task(takes_context=True)
def email_sales_report(context) -> str:
    from steady_queue.workflows import upstream_results

    results = upstream_results(context)
    return f"report: {results['transform_sales']} items, {results['load_sales']} loaded"
