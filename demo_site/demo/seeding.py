"""Fill the queue with a realistic mix of jobs for the dashboard to show."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from steady_queue.backend import enqueue_all
from steady_queue.models import Job, Semaphore
from steady_queue.testing import run_ready_jobs

from . import tasks
from .models import Customer

CUSTOMERS = [
    ("Acme Corporation", "billing@acme.example"),
    ("Globex", "accounts@globex.example"),
    ("Initech", "finance@initech.example"),
]


def seed() -> dict[str, int]:
    """Enqueue every kind of job; return how many jobs are in each state afterwards."""
    customers = _customers()
    _run_to_completion(customers)
    _enqueue_ready(customers)
    _enqueue_scheduled()
    _enqueue_blocked()
    return counts()


def reset() -> None:
    """Delete every job (their executions go with them) and every semaphore."""
    with transaction.atomic():
        Job.objects.all().delete()
        Semaphore.objects.all().delete()


def enqueue_batch() -> int:
    """Enqueue a handful of quick, slow, failing and limited jobs in one bulk call."""
    calls = [
        (tasks.say_hello, ["visitor"], {}),
        (tasks.crunch_numbers, [], {"steps": 10}),
        (tasks.charge_card.using(priority=20), ["4000000000000002", Decimal("12.50")], {}),
        (tasks.call_flaky_service, [], {"failure_rate": 0.6}),
        (tasks.check_inventory, ["SKU-42"], {}),
        *((tasks.sync_account, [7], {"seconds": 2.0}) for _ in range(3)),
    ]
    return len(enqueue_all(calls))


def counts() -> dict[str, int]:
    """Count jobs by the state of their execution."""
    jobs = Job.objects.all()
    return {
        "finished": jobs.filter(finished_at__isnull=False).count(),
        "failed": jobs.filter(failed_execution__isnull=False).count(),
        "ready": jobs.filter(ready_execution__isnull=False).count(),
        "scheduled": jobs.filter(scheduled_execution__isnull=False).count(),
        "blocked": jobs.filter(blocked_execution__isnull=False).count(),
    }


def _customers() -> list[Customer]:
    return [
        Customer.objects.get_or_create(name=name, defaults={"email": email})[0]
        for name, email in CUSTOMERS
    ]


def _run_to_completion(customers: list[Customer]) -> None:
    """Run jobs in this process so that finished and failed ones (with tracebacks) exist."""
    for name in ["Ada", "Grace", "Linus", "Guido"]:
        tasks.say_hello.enqueue(name)
    for customer in customers:
        _enqueue_invoice(customer)
    tasks.check_inventory.enqueue("SKU-1001")
    tasks.describe_attempt.enqueue("seeded")
    tasks.charge_card.enqueue("4000000000000002", Decimal("99.00"))
    tasks.charge_card.using(queue_name="real_time").enqueue("4000000000009995", Decimal("5.00"))
    # Always fails: the retry policy runs it four times, so the job keeps four errors.
    tasks.call_flaky_service.enqueue(failure_rate=1.0)
    _enqueue_invoice_for_deleted_customer()
    run_ready_jobs(include_scheduled=True)


def _enqueue_ready(customers: list[Customer]) -> None:
    """Jobs in several queues and priorities, waiting for a worker."""
    calls = [
        *((tasks.crunch_numbers, [], {"steps": 15 + 5 * i}) for i in range(4)),
        (tasks.crunch_numbers.using(priority=-10), [], {"steps": 40}),
        *((tasks.say_hello.using(priority=p), [f"priority {p}"], {}) for p in (-50, 0, 50)),
        (tasks.send_invoice.using(priority=30), *_invoice_arguments(customers[0])),
        (tasks.call_flaky_service, [], {"failure_rate": 0.5}),
        (tasks.check_inventory.using(queue_name="real_time"), ["SKU-2002"], {}),
    ]
    enqueue_all(calls)


def _enqueue_scheduled() -> None:
    """Jobs due later: in minutes, hours and tomorrow."""
    tasks.say_hello.using(run_after=timedelta(minutes=10)).enqueue("in ten minutes")
    tasks.crunch_numbers.using(run_after=timedelta(hours=2)).enqueue(steps=5)
    tomorrow = timezone.now() + timedelta(days=1)
    tasks.charge_card.using(run_after=tomorrow).enqueue("4242424242424242", Decimal("49.90"))


def _enqueue_blocked() -> None:
    """Several syncs of one account: one holds the semaphore, the others wait blocked."""
    for _ in range(4):
        tasks.sync_account.enqueue(1, seconds=5.0)
    tasks.sync_account.enqueue(2, seconds=5.0)


def _enqueue_invoice(customer: Customer) -> None:
    args, kwargs = _invoice_arguments(customer)
    tasks.send_invoice.enqueue(*args, **kwargs)


def _invoice_arguments(customer: Customer) -> tuple[list, dict]:
    now = timezone.now()
    return [customer], {
        "amount": Decimal("1250.00"),
        "due_on": (now + timedelta(days=30)).date(),
        "sent_at": now,
        "reference": uuid.uuid4(),
        "grace": timedelta(days=7),
    }


def _enqueue_invoice_for_deleted_customer() -> None:
    """The customer is deleted before the job runs: it fails with DeserializationError."""
    gone = Customer.objects.create(name=f"Gone {uuid.uuid4().hex[:8]}", email="gone@example.com")
    _enqueue_invoice(gone)
    gone.delete()
