"""Time every dashboard page against the current database: the median of several runs.

    manage.py steady_queue_dashboard_fill        # once: a large data set
    manage.py steady_queue_dashboard_bench --runs 5

Each page is requested through Django's test client as a logged-in superuser
(full middleware, template rendering and queries; no network), once to warm
up and then ``--runs`` times. A benchmark, not a test: it prints figures and
never fails on them.
"""

from __future__ import annotations

import statistics
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from steady_queue import db
from steady_queue.models import FailedExecution, Job, states

from ... import adapter
from ...listings import LISTINGS

BENCH_USER = "steady-queue-bench"


class Command(BaseCommand):
    help = "Print the median response time of every dashboard page (a benchmark, not a test)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", type=int, default=5)
        parser.add_argument("--target-ms", type=float, default=150.0)

    def handle(self, *args, **options) -> None:
        client = logged_in_client()
        counts = ", ".join(
            f"{tally.value:,}{'+' if tally.capped else ''} {status}"
            for status, tally in adapter.status_counts().items()
        )
        self.stdout.write(f"{db.connection().vendor}: {counts}\n")
        slow = []
        self.stdout.write(f"{'page':<44} {'median':>9} {'max':>9} {'queries':>8}")
        for label, url in pages():
            times, queries = measure(client, url, options["runs"])
            median = statistics.median(times)
            flag = "" if median < options["target_ms"] else "  <- over target"
            self.stdout.write(
                f"{label:<44} {median:>7.1f}ms {max(times):>7.1f}ms {queries:>8}{flag}"
            )
            if flag:
                slow.append(label)
        verdict = f"{len(slow)} page(s) over {options['target_ms']:.0f} ms" if slow else "all under"
        self.stdout.write(f"\n{verdict} (median of {options['runs']} runs each).")


def logged_in_client() -> Client:
    """A test client logged in as a superuser made for the benchmark."""
    user, _ = get_user_model().objects.get_or_create(
        username=BENCH_USER, defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    return client


def pages() -> list[tuple[str, str]]:
    """(label, URL) of every dashboard page, for the jobs now in the database."""
    job = Job.objects.order_by("-pk").first()
    failed = FailedExecution.objects.order_by("-created_at").first()
    if job is None:
        raise CommandError("No job in the database: run steady_queue_dashboard_fill first.")
    finished = reverse("steady_queue_dashboard:job-list", args=[states.FINISHED])
    failed_list = reverse("steady_queue_dashboard:job-list", args=[states.FAILED])
    found = [("overview (last hour)", reverse("steady_queue_dashboard:overview"))]
    found.append(("overview (last 24 hours)", found[0][1] + "?span=day"))
    found += [
        (f"{status} jobs", reverse("steady_queue_dashboard:job-list", args=[status]))
        for status in LISTINGS
    ]
    found += [
        ("finished, filtered by task", f"{finished}?task={job.task_path}"),
        ("finished, filtered by queue", f"{finished}?queue={job.queue_name}"),
        ("finished, last hour", f"{finished}?period=1h"),
        ("finished, argument search", f"{finished}?args=account_id%3D42"),
        ("failed, filtered by queue", f"{failed_list}?queue={job.queue_name}"),
        ("failed, argument search", f"{failed_list}?args=42"),
        ("failed, htmx fragment", f"{failed_list}#htmx"),
        ("queues", reverse("steady_queue_dashboard:queue-list")),
        ("queue detail", reverse("steady_queue_dashboard:queue-detail", args=[job.queue_name])),
        ("processes", reverse("steady_queue_dashboard:process-list")),
        ("recurring tasks", reverse("steady_queue_dashboard:recurring-list")),
        ("concurrency", reverse("steady_queue_dashboard:concurrency")),
        ("audit log", reverse("steady_queue_dashboard:audit-log")),
    ]
    if failed is not None:
        detail = reverse("steady_queue_dashboard:job-detail", args=[failed.job_id])
        found.append(("failed job detail", detail))
    return found


def measure(client: Client, url: str, runs: int) -> tuple[list[float], int]:
    """Milliseconds of ``runs`` requests after a warm-up, and the queries of one."""
    path, htmx = url.removesuffix("#htmx"), url.endswith("#htmx")
    headers = {"HX-Request": "true"} if htmx else {}
    with CaptureQueriesContext(db.connection()) as captured:
        _get(client, path, headers)  # also the warm-up
    queries = len(captured)  # now: the next request empties the connection's log
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        _get(client, path, headers)
        times.append((time.perf_counter() - started) * 1000)
    return times, queries


def _get(client: Client, path: str, headers: dict) -> None:
    response = client.get(path, headers=headers)
    if response.status_code != 200:
        raise CommandError(f"{path} answered {response.status_code}.")
