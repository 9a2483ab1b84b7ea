"""Fill the queue with a realistic mix of jobs for the dashboard to show.

The mix lasts: for the first minutes after ``make demo`` every list has rows to try the
dashboard's actions on. Jobs wait behind the paused "reports" queue until you resume it;
syncs of one account stay blocked behind each other for minutes; number crunchers run
with progress bars for one to four minutes; some jobs are due in a few minutes, others
in hours; failures carry four distinct errors. The "demo.keep-busy" recurring task then
adds a fresh batch every minute."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from steady_queue.backend import enqueue_all
from steady_queue.batches import batch
from steady_queue.models import (
    Batch,
    ClaimedExecution,
    FailedExecution,
    Job,
    Pause,
    RateLimitBucket,
    RecurringTask,
    Semaphore,
    WorkflowRun,
)
from steady_queue.models.queue import Queue
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow

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
    _enqueue_behind_paused_queue()
    _enqueue_scheduled()
    _enqueue_blocked()
    _enqueue_throttled()
    _enqueue_groups()
    return counts()


def reset() -> None:
    """Delete every job (their executions and unique keys go with them), batch, workflow
    run, semaphore, pause and rate limit window."""
    with transaction.atomic():
        Job.objects.all().delete()
        Batch.objects.all().delete()
        WorkflowRun.objects.all().delete()
        Semaphore.objects.all().delete()
        Pause.objects.all().delete()
        RateLimitBucket.objects.all().delete()


def enqueue_batch() -> int:
    """Enqueue a handful of jobs in one bulk call: quick, running a while with progress,
    failing, flaky, blocked behind each other, and one due in three minutes."""
    calls = [
        (tasks.say_hello, ["visitor"], {}),
        (tasks.crunch_numbers, [], {"steps": 40}),
        (tasks.charge_card.using(priority=20), ["4000000000000002", Decimal("12.50")], {}),
        (tasks.call_flaky_service, [], {"failure_rate": 0.6}),
        (tasks.check_inventory, ["SKU-42"], {}),
        (tasks.say_hello.using(run_after=timedelta(minutes=3)), ["in three minutes"], {}),
        *((tasks.sync_account, [7], {"seconds": 20.0}) for _ in range(3)),
    ]
    return len(enqueue_all(calls))


def counts() -> dict[str, int]:
    """Count jobs by the state of their execution, and what makes the mix interesting."""
    jobs = Job.objects.all()
    return {
        "finished": jobs.filter(finished_at__isnull=False).count(),
        "failed": jobs.filter(failed_execution__isnull=False).count(),
        "ready": jobs.filter(ready_execution__isnull=False).count(),
        "scheduled": jobs.filter(scheduled_execution__isnull=False).count(),
        "blocked": jobs.filter(blocked_execution__isnull=False).count(),
        "throttled": jobs.filter(throttled_execution__isnull=False).count(),
        "in progress": ClaimedExecution.objects.count(),
        "running with progress": jobs.filter(
            claimed_execution__isnull=False, progress__isnull=False
        ).count(),
        "ready in a paused queue": jobs.filter(
            ready_execution__isnull=False,
            queue_name__in=Pause.objects.values("queue_name"),
        ).count(),
        "distinct errors": FailedExecution.objects.values("exception_class").distinct().count(),
        "recurring tasks": RecurringTask.objects.count(),
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
    for name in ["quarterly forecast", "yearly churn"]:  # no such template: fails at once
        tasks.build_report.using(queue_name="default").enqueue(name)
    run_ready_jobs(include_scheduled=True)


def _enqueue_ready(customers: list[Customer]) -> None:
    """Jobs in several queues and priorities. The number crunchers take one to four
    minutes, so the running list shows progress bars and later jobs wait their turn."""
    calls = [
        *((tasks.crunch_numbers, [], {"steps": steps}) for steps in (60, 120, 180, 240)),
        (tasks.crunch_numbers.using(priority=-10), [], {"steps": 90}),
        (tasks.crunch_numbers.using(priority=-20), [], {"steps": 45}),
        *((tasks.say_hello.using(priority=p), [f"priority {p}"], {}) for p in (-50, 0, 50)),
        (tasks.send_invoice.using(priority=30), *_invoice_arguments(customers[0])),
        (tasks.call_flaky_service, [], {"failure_rate": 0.5}),
        (tasks.check_inventory.using(queue_name="real_time"), ["SKU-2002"], {}),
        # Three calls, one job: the duplicates return the first one's result.
        *((tasks.refresh_customer_stats, [customers[0].pk], {}) for _ in range(3)),
    ]
    enqueue_all(calls)


def _enqueue_behind_paused_queue() -> None:
    """Reports wait in the paused "reports" queue: resume it from the Queues page."""
    Queue("reports").pause()
    enqueue_all(
        [
            (tasks.build_report, ["daily sales"], {"pages": 20}),
            (tasks.build_report, ["weekly signups"], {"pages": 30}),
            (tasks.build_report.using(priority=10), ["monthly invoices"], {"pages": 15}),
        ]
    )


def _enqueue_scheduled() -> None:
    """Jobs due later: in a few minutes (watch them start), in hours, and tomorrow."""
    tasks.say_hello.using(run_after=timedelta(minutes=2)).enqueue("in two minutes")
    tasks.check_inventory.using(run_after=timedelta(minutes=5)).enqueue("SKU-3003")
    tasks.say_hello.using(run_after=timedelta(minutes=10)).enqueue("in ten minutes")
    tasks.crunch_numbers.using(run_after=timedelta(hours=2)).enqueue(steps=5)
    tomorrow = timezone.now() + timedelta(days=1)
    tasks.charge_card.using(run_after=tomorrow).enqueue("4242424242424242", Decimal("49.90"))


def _enqueue_blocked() -> None:
    """Syncs of one account run one at a time, 45 seconds each: three of them wait,
    blocked, for up to a few minutes. Another account's sync runs beside them."""
    for _ in range(4):
        tasks.sync_account.enqueue(1, seconds=45.0)
    tasks.sync_account.enqueue(2, seconds=45.0)


def _enqueue_throttled() -> None:
    """Two calls a minute per partner: of six calls to one partner, four wait, throttled,
    and start two a minute; the Rate limits page shows the window in use."""
    enqueue_all([(tasks.notify_partner, ["acme-logistics", 1000 + n], {}) for n in range(6)])


def _enqueue_groups() -> None:
    """A batch import with one malformed row (its summary runs once all rows ended), and
    two nightly workflows: one runs through, one fails at its load and blocks its report."""
    with batch(on_finish=tasks.summarise_import, description="orders import"):
        enqueue_all([(tasks.import_order_row, [row], {}) for row in (1, 2, -3, 4, 5)])
    for name, fail in (("nightly sales", False), ("nightly sales (warehouse down)", True)):
        day = timezone.now().date().isoformat()
        wf = Workflow(name)
        extract = wf.add(tasks.extract_sales, args=(day,))
        transform = wf.add(tasks.transform_sales, args=(day,), after=[extract])
        load = wf.add(tasks.load_sales, args=(day,), kwargs={"fail": fail}, after=[transform])
        wf.add(tasks.email_sales_report, after=[transform, load])
        wf.enqueue()


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
