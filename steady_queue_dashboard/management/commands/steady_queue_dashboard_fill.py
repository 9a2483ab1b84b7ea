"""Fill the queue tables with a large, realistic data set, to measure the dashboard.

    manage.py steady_queue_dashboard_fill --finished 1000000 --failed 100000 \\
        --scheduled 100000 --ready 10000

Rows go in with bulk inserts and explicit ids, a batch per transaction; the
tables are analyzed at the end so that the planner knows their size. Not for
production databases: the jobs name tasks that do not exist.

Finished jobs beyond the first ``--template`` (50,000) are copies of those, made by
the database (``INSERT ... SELECT`` with shifted ids, a transaction per copy), so that
10,000,000 of them take minutes rather than most of an hour of Python.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandParser
from django.core.management.color import no_style
from django.db.models import Max
from django.utils import timezone

from steady_queue import db
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    Process,
    RateLimitBucket,
    ReadyExecution,
    RecurringTask,
    ScheduledExecution,
    ThrottledExecution,
    WaitingExecution,
    states,
)

from ..fill_groups import GroupsFill
from ..fill_states import StatesFill

TASKS = [
    "billing.tasks.charge_card",
    "billing.tasks.send_invoice",
    "mail.tasks.send_welcome_email",
    "mail.tasks.send_digest",
    "reports.tasks.build_monthly_report",
    "search.tasks.reindex_document",
    "media.tasks.make_thumbnail",
    "sync.tasks.pull_crm_contacts",
]
QUEUES = ["default", "real_time", "background", "low", "mailers"]
# Jobs made per state by default (its --<state> option), in the order they are made.
STATE_SIZES = {
    states.FINISHED: 1_000_000,
    states.FAILED: 100_000,
    states.SCHEDULED: 100_000,
    states.READY: 10_000,
    states.BLOCKED: 1_000,
    states.THROTTLED: 1_000,
    states.RUNNING: 40,
}


class Command(StatesFill, GroupsFill, BaseCommand):
    help = "Fill the queue tables with a large data set for measuring the dashboard."

    def add_arguments(self, parser: CommandParser) -> None:
        sizes = [
            *STATE_SIZES.items(),
            ("batches", 20),  # batches of jobs (steady_queue.batches), a few jobs each
            ("workflows", 3),  # workflow runs of 7 steps
        ]
        for name, default in sizes:
            # --claimed, the old spelling of --running, still works.
            names = [f"--{name}", *(["--claimed"] if name == states.RUNNING else [])]
            parser.add_argument(
                *names, dest=name, type=int, default=default, help=f"default {default}"
            )
        parser.add_argument(
            "--days", type=_days, default=7, help="spread finished jobs over (1 to 36500)"
        )
        parser.add_argument("--batch-size", type=int, default=5_000)
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument(
            "--template",
            type=int,
            default=50_000,
            help="finished jobs made one by one; the rest are copies of them",
        )

    def handle(self, *args, **options) -> None:
        self.random = random.Random(options["seed"])
        self.now = timezone.now()
        self.batch_size = options["batch_size"]
        self.windows: set[str] = set()  # rate limit windows made so far, by key
        self.next_id = (Job.objects.aggregate(top=Max("pk"))["top"] or 0) + 1
        started = time.monotonic()
        workers = self._processes(max(1, options[states.RUNNING] // 10))
        self._fill_finished(options[states.FINISHED], options["days"], options["template"])
        builders = {states.RUNNING: self._claimed(workers)}
        for state in list(STATE_SIZES)[1:]:
            build = builders.get(state) or getattr(self, f"_{state}")
            self._fill(state, options[state], build)
        self._fill_batches(options["batches"])
        self._fill_workflows(options["workflows"])
        self._recurring_tasks()
        self._reset_sequence_and_analyze()
        self.stdout.write(f"Done in {time.monotonic() - started:.1f}s.")

    def _fill(self, label: str, count: int, build: Callable[[Job], list]) -> None:
        """Insert ``count`` jobs, each with the execution rows ``build`` returns."""
        started = time.monotonic()
        for batch in _batches(count, self.batch_size):
            jobs = [self._job() for _ in range(batch)]
            executions = [row for job in jobs for row in build(job)]
            with db.atomic():
                Job.objects.bulk_create(jobs)
                for model in {type(row) for row in executions}:
                    rows = [row for row in executions if type(row) is model]
                    model.objects.bulk_create(rows)
        self.stdout.write(f"{count:>9,} {label} jobs in {time.monotonic() - started:.1f}s")

    def _fill_finished(self, count: int, days: int, template: int) -> None:
        """Make up to ``template`` finished jobs, then copy them until there are ``count``."""
        first = self.next_id
        made = min(count, max(template, 1))
        self._fill(states.FINISHED, made, self._finished(days))
        started = time.monotonic()
        copies = 0
        while made < count:
            rows = min(count - made, template)
            self._copy_jobs(first, rows, offset=self.next_id - first)
            self.next_id += rows
            made += rows
            copies += rows
        if copies:
            self.stdout.write(
                f"{copies:>9,} finished jobs copied in {time.monotonic() - started:.1f}s"
            )

    def _copy_jobs(self, first: int, rows: int, offset: int) -> None:
        """Copy the jobs ``first .. first + rows - 1`` with their ids shifted by ``offset``."""
        table = _quote(Job._meta.db_table)
        columns = [field.column for field in Job._meta.concrete_fields if not field.primary_key]
        listed = ", ".join(_quote(column) for column in columns)
        pk = _quote(Job._meta.pk.column)
        with db.atomic(), db.connection().cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({pk}, {listed}) SELECT {pk} + %s, {listed} FROM {table} "
                f"WHERE {pk} >= %s AND {pk} < %s",
                [offset, first, first + rows],
            )

    def _job(self) -> Job:
        pick = self.random
        job = Job(
            pk=self.next_id,
            queue_name=pick.choice(QUEUES),
            task_path=pick.choice(TASKS),
            arguments={"args": [self.next_id], "kwargs": {"account_id": pick.randrange(5_000)}},
            priority=pick.choice([0, 0, 0, 5, 10, -5]),
            created_at=self.now - timedelta(seconds=pick.uniform(0, 3_600)),
        )
        self.next_id += 1
        return job

    def _processes(self, count: int) -> list[Process]:
        processes = Process.objects
        supervisor = processes.create(kind="Supervisor", name=_name("supervisor"), pid=1000)
        metadata = {"queues": "*", "threads": 5, "polling_interval": 0.1}
        children = [
            Process(
                kind="Worker",
                name=_name(f"worker-{n}"),
                pid=1001 + n,
                hostname="bench",
                supervisor=supervisor,
                metadata=metadata,
            )
            for n in range(count)
        ]
        children.append(
            Process(
                kind="Dispatcher",
                name=_name("dispatcher"),
                pid=1000 + count + 1,
                supervisor=supervisor,
            )
        )
        processes.bulk_create(children)
        return [child for child in children if child.kind == "Worker"]

    def _recurring_tasks(self) -> None:
        schedules = {
            "nightly-report": "0 3 * * *",
            "hourly-sync": "0 * * * *",
            "digest": "*/15 * * * *",
        }
        for key, schedule in schedules.items():
            RecurringTask.objects.get_or_create(
                key=key,
                defaults={"schedule": schedule, "task_path": TASKS[0], "static": False},
            )

    def _reset_sequence_and_analyze(self) -> None:
        connection = db.connection()
        statements = connection.ops.sequence_reset_sql(no_style(), [Job])
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            for statement in _analyze_statements(connection.vendor):
                cursor.execute(statement)


def _quote(name: str) -> str:
    return db.connection().ops.quote_name(name)


def _batches(total: int, size: int) -> Iterator[int]:
    while total > 0:
        yield min(size, total)
        total -= size


def _name(base: str) -> str:
    return f"{base}-{random.randrange(16**6):06x}"


def _analyze_statements(vendor: str) -> list[str]:
    tables = [
        model._meta.db_table
        for model in (
            Job,
            ReadyExecution,
            ScheduledExecution,
            FailedExecution,
            BlockedExecution,
            ThrottledExecution,
            RateLimitBucket,
            ClaimedExecution,
            WaitingExecution,
        )
    ]
    if vendor == "postgresql":
        # VACUUM also sets the visibility map, which index-only scans need after bulk loads.
        return [f"VACUUM ANALYZE {table}" for table in tables]
    if vendor == "mysql":
        return [f"ANALYZE TABLE {table}" for table in tables]
    return ["ANALYZE"]


def _days(text: str) -> int:
    """A span of days a date can go back (a larger one overflows): else a usage error."""
    try:
        days = int(text)
    except ValueError:
        days = 0
    if not 1 <= days <= 36_500:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days from 1 to 36500.")
    return days
