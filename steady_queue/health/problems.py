"""What is wrong with the queue right now: the one list the health command and view render.

Each check reads what every machine recorded in the queue database (process rows and
their heartbeats, ready jobs, pauses, recurring tasks), so one check covers a whole
deployment. A handful of queries whatever the table sizes, each reading a bounded number
of index entries (queue latency: the first entry of the poll index per queue), so the
cost stays flat however many jobs wait: the command runs as a probe and the view,
anonymous, behind a load balancer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError
from django.utils import timezone

import steady_queue

from .. import configuration, db
from ..checks.queues import polls
from . import horizon

# Processes read per check: far more than any deployment runs, so the query stays bounded.
MAX_PROCESSES = 1000
# Stale processes named one per line; the rest are counted in one more line.
MAX_STALE_LINES = 10


@dataclass(frozen=True)
class Problem:
    """One thing wrong: a stable ``name`` for machines, a ``message`` for people."""

    name: str
    message: str
    # What it is about (a queue name, a process kind), or "".
    subject: str = ""

    def public(self) -> dict[str, str]:
        """What the health view shows: the problem's name and subject, never job data."""
        return {"problem": self.name, "subject": self.subject}


@dataclass(frozen=True, kw_only=True)
class HealthCheck:
    """What to check: latency above ``max_latency`` (None: not checked), only ``queues``."""

    max_latency: timedelta | None = None
    queues: Sequence[str] = ()
    # Dotted path of the Configuration.Options, as ``manage.py steady_queue --config``.
    config: str | None = None

    def problems(self) -> list[Problem]:
        """Return every problem found, the database's unavailability alone if it is down."""
        try:
            options = configuration.load(self.config)
        except ImproperlyConfigured as exc:
            return [Problem("invalid_configuration", f"Invalid configuration: {exc}")]
        try:
            return self._problems(options)
        except DatabaseError as exc:
            return [
                Problem(
                    "database_unreachable",
                    f"The queue database ({db.alias()!r}) is unreachable: {_first_line(exc)}",
                )
            ]

    def _problems(self, options: configuration.Options) -> list[Problem]:
        now = timezone.now()
        processes = _processes()
        live = [p for p in processes if p.alive(now)]
        found = _missing_processes(options, live, self.queues)
        found += _stale(processes, now)
        if self.max_latency is not None:
            found += _slow_queues(self.max_latency, self.queues, now)
        if not any(p.kind == "Scheduler" for p in live) and _recurring_tasks_enabled():
            found.append(
                Problem(
                    "no_scheduler",
                    "No live scheduler, but recurring tasks are enabled: they are not enqueued.",
                )
            )
        found += _old_transactions()
        return found


@dataclass(frozen=True)
class ProcessRow:
    kind: str
    name: str
    hostname: str
    pid: int
    queues: tuple[str, ...]
    last_heartbeat_at: datetime

    def alive(self, now: datetime) -> bool:
        from ..models import Process

        return Process.heartbeat_is_alive(self.last_heartbeat_at, now)

    def __str__(self) -> str:
        return f"{self.kind} {self.name} (pid {self.pid} on {self.hostname or 'unknown host'})"


def _processes() -> list[ProcessRow]:
    from ..models import Process

    rows = Process.objects.order_by("pk").values_list(
        "kind", "name", "hostname", "pid", "metadata", "last_heartbeat_at"
    )
    return [
        ProcessRow(kind, name, hostname, pid, _queues_of(metadata), heartbeat)
        for kind, name, hostname, pid, metadata, heartbeat in rows[:MAX_PROCESSES]
    ]


def _queues_of(metadata: object) -> tuple[str, ...]:
    # Only workers record queues; a worker row without them is taken to poll all.
    queues = metadata.get("queues", ["*"]) if isinstance(metadata, dict) else ["*"]
    return tuple(q for q in queues if isinstance(q, str)) if isinstance(queues, list) else ("*",)


def _missing_processes(
    options: configuration.Options, live: list[ProcessRow], queues: Sequence[str]
) -> list[Problem]:
    workers, dispatchers = options.configured_workers, options.configured_dispatchers
    found = []
    if (workers or dispatchers) and not any(p.kind == "Supervisor" for p in live):
        found.append(
            Problem("no_supervisor", "No live supervisor: is manage.py steady_queue running?")
        )
    wanted = queues or [selector for worker in workers for selector in worker.queues]
    for queue in unserved(dict.fromkeys(wanted), live):
        found.append(
            Problem("no_worker", f"No live worker takes jobs from queue {queue!r}.", queue)
        )
    if dispatchers and not any(p.kind == "Dispatcher" for p in live):
        found.append(
            Problem("no_dispatcher", "No live dispatcher: scheduled jobs and retries wait.")
        )
    return found


def unserved(queues: Iterable[str], live: Sequence) -> list[str]:
    """The ``no_worker`` problem: which of ``queues`` no ``live`` worker polls.

    ``live`` holds the live processes, as rows with a ``kind`` and the ``queues`` they
    poll (this module's, or the dashboard's): both ask here.
    """
    selectors = [process.queues for process in live if process.kind == "Worker"]
    return [queue for queue in queues if not any(polls(s, queue) for s in selectors)]


def _stale(processes: list[ProcessRow], now: datetime) -> list[Problem]:
    stale = [p for p in processes if not p.alive(now)]
    found = [
        Problem(
            "stale_heartbeat",
            f"{process} last sent a heartbeat {_seconds(now - process.last_heartbeat_at)} ago.",
            process.kind,
        )
        for process in stale[:MAX_STALE_LINES]
    ]
    if len(stale) > MAX_STALE_LINES:
        more = len(stale) - MAX_STALE_LINES
        found.append(Problem("stale_heartbeat", f"{more} more processes have stale heartbeats."))
    return found


def _slow_queues(max_latency: timedelta, queues: Sequence[str], now: datetime) -> list[Problem]:
    from ..models import ReadyExecution
    from ..models.queue_figures import next_ready_at, queue_names

    # The job a worker takes next, per queue: the first entry of the poll index, so the
    # check reads a few index entries per queue however many jobs wait. A paused queue
    # waits because an operator asked it to: not a problem to page about.
    names = list(queues) or queue_names(ReadyExecution)[0]
    waiting = next_ready_at(names, paused=False)
    return [
        Problem(
            "latency",
            f"Queue {queue!r}: the next ready job has waited "
            f"{_seconds(now - ready_at)} (more than {_seconds(max_latency)}).",
            queue,
        )
        for queue, ready_at in sorted(waiting.items())
        if now - ready_at > max_latency
    ]


def _old_transactions() -> list[Problem]:
    threshold = steady_queue.long_transaction_threshold
    return [
        Problem(
            "long_transaction",
            f"A transaction older than {_minutes(threshold)} holds back cleanup: {transaction} "
            "(end it; set idle_in_transaction_session_timeout).",
            str(transaction.pid),
        )
        for transaction in horizon.old_transactions()
    ]


def _minutes(delta: timedelta | None) -> str:
    seconds = delta.total_seconds() if delta else 0
    return f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g}s"


def _recurring_tasks_enabled() -> bool:
    from ..models import RecurringTask

    return RecurringTask.objects.filter(enabled=True).exists()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _seconds(delta: timedelta) -> str:
    return f"{max(delta.total_seconds(), 0):.0f}s"
