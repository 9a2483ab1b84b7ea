"""What the fault suite checks: the queue's rows against the tasks' own record.

The record (tests/faults/tasks.py) says which runs started and ended, in which process,
when. Workers that were killed or frozen are known to the test, with the moment they died
or froze. From both, each scenario counts jobs lost, at-most-once jobs run twice, and
moments a concurrency key ran more jobs than its limit.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Q
from django.utils.dateparse import parse_datetime

from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
)

LIMIT = 2  # tests.tasks.faults.limited: to=2
# The figures of every scenario of this pytest session, for the terminal summary.
FIGURES: list[Figures] = []


@dataclass
class Figures:
    scenario: str
    jobs: int = 0
    kills: int = 0
    restarts: int = 0
    freezes: int = 0
    lost: int = 0
    run_twice: int = 0
    not_completed: int = 0  # at-least-once jobs that did not end successfully
    limit_violations: int = 0
    late_starts: int = 0  # runs a frozen (pruned) worker began after it froze
    late_writes: int = 0  # a task's writes outside every attempt of its job (timeouts)
    slot_overlaps: int = 0  # starts while another run held a to=1 slot (timeouts)
    left_claimed: int = 0
    orphan_seconds: float = 0.0  # the longest wait for a killed supervisor's children
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    released_by_hand: list[str] = field(
        default_factory=list
    )  # labels, docs/reference/concurrency.md: may run over the limit

    @classmethod
    def total(cls, scenarios: list[Figures]) -> Figures:
        total = cls("total")
        for figures in scenarios:
            for name, value in vars(figures).items():
                if isinstance(value, int):
                    setattr(total, name, getattr(total, name) + value)
            total.orphan_seconds = max(total.orphan_seconds, figures.orphan_seconds)
            total.seconds += figures.seconds
        return total

    def line(self) -> str:
        return (
            f"{self.scenario}: jobs={self.jobs} kills={self.kills} restarts={self.restarts} "
            f"freezes={self.freezes} lost={self.lost} run_twice={self.run_twice} "
            f"not_completed={self.not_completed} limit_violations={self.limit_violations} "
            f"late_starts={self.late_starts} late_writes={self.late_writes} "
            f"slot_overlaps={self.slot_overlaps} left_claimed={self.left_claimed} "
            f"orphans_gone_in={self.orphan_seconds:.1f}s seconds={self.seconds:.1f}"
        )


@dataclass(frozen=True)
class Run:
    label: str
    key: str
    pid: int
    started: float
    ended: float | None


class Record:
    """The tasks' own SQLite record of their runs."""

    def __init__(self, path: Path):
        self.path = path
        with contextlib.closing(sqlite3.connect(path)) as connection, connection:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                "CREATE TABLE runs (label TEXT, event TEXT, pid INTEGER, thread INTEGER, "
                "at REAL, key TEXT)"
            )

    def _rows(self) -> list[tuple]:
        with contextlib.closing(sqlite3.connect(self.path, timeout=60)) as connection:
            return connection.execute(
                "SELECT label, event, pid, thread, at, key FROM runs ORDER BY at"
            ).fetchall()

    def runs(self) -> list[Run]:
        """Each start paired with the end of the same label in the same thread, if any."""
        open_runs: dict[tuple, tuple] = {}
        runs = []
        for label, event, pid, thread, at, key in self._rows():
            if event == "start":
                open_runs[(label, pid, thread)] = (at, key)
            elif (
                event == "end"
                and (started := open_runs.pop((label, pid, thread), None)) is not None
            ):
                runs.append(Run(label, started[1], pid, started[0], at))
        runs += [Run(label, key, pid, at, None) for (label, pid, _), (at, key) in open_runs.items()]
        return runs

    def starts(self) -> Counter:
        return Counter(run.label for run in self.runs())

    def last_limited_end(self, since: float) -> tuple[int, float] | None:
        """The pid and time of the latest end of a limited run after ``since``, if any."""
        with contextlib.closing(sqlite3.connect(self.path, timeout=60)) as connection:
            return connection.execute(
                "SELECT pid, at FROM runs WHERE event = 'end' AND key != '' AND at > ? "
                "ORDER BY at DESC LIMIT 1",
                (since,),
            ).fetchone()

    def begun(self) -> list[tuple[str, int, float]]:
        """(label, pid, time) of each run as the engine began it (its task_started)."""
        return [
            (label, pid, at) for label, event, pid, _, at, _ in self._rows() if event == "begin"
        ]

    def labels(self) -> set[str]:
        """The labels of every run started so far."""
        with contextlib.closing(sqlite3.connect(self.path, timeout=60)) as connection:
            rows = connection.execute("SELECT label FROM runs WHERE event = 'start'")
            return {label for (label,) in rows}

    def locked(self) -> bool:
        """Whether some process holds the record's write lock."""
        with contextlib.closing(sqlite3.connect(self.path, timeout=0.2)) as connection:
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                return True
            connection.rollback()
            return False

    def started(self) -> int:
        return sum(1 for _, event, *_ in self._rows() if event == "start")


def unfinished() -> Q:
    return Q(finished_at__isnull=True) & Q(failed_execution__isnull=True)


def where_unfinished_jobs_are() -> dict[str, int]:
    tables = {
        "ready": ReadyExecution,
        "scheduled": ScheduledExecution,
        "blocked": BlockedExecution,
        "claimed": ClaimedExecution,
    }
    counts = {name: model.objects.count() for name, model in tables.items()}
    return {name: count for name, count in counts.items() if count}


def settle(timeout: float, stalled_after: float = 20.0) -> bool:
    """Wait until every job has ended (finished or failed); False at the deadline, or
    as soon as no job has ended for ``stalled_after`` seconds (the rest are stranded)."""
    deadline = time.monotonic() + timeout
    left, last_change = None, time.monotonic()
    while (now_left := Job.objects.filter(unfinished()).count()) > 0:
        now = time.monotonic()
        if now_left != left:
            left, last_change = now_left, now
        if now > deadline or now - last_change > stalled_after:
            return False
        time.sleep(0.2)
    return True


def check(
    figures: Figures,
    record: Record,
    *,
    deaths: dict[int, float],
    frozen: dict[int, float] | None = None,
) -> Figures:
    """Fill in ``figures`` from the queue's rows and the record; list what went wrong."""
    frozen = frozen or {}
    runs = record.runs()
    starts = Counter(run.label for run in runs)
    labels = dict(Job.objects.values_list("pk", "arguments"))
    by_label = {arguments["args"][0]: pk for pk, arguments in labels.items()}
    figures.jobs = len(by_label)

    lost = Job.objects.filter(unfinished()).count()
    if lost:
        figures.problems.append(f"{lost} jobs never ended; they are {where_unfinished_jobs_are()}")
    figures.lost = lost

    twice = sorted(label for label in by_label if not label.startswith("alo") and starts[label] > 1)
    if twice:
        figures.problems.append(f"at-most-once jobs run twice: {twice[:10]}")
    figures.run_twice = len(twice)

    succeeded = set(Job.objects.filter(finished_at__isnull=False).values_list("pk", flat=True))
    incomplete = sorted(
        label
        for label, pk in by_label.items()
        if label.startswith("alo") and (pk not in succeeded or not _ended(label, runs))
    )
    if incomplete:
        described = [_describe(by_label[label]) for label in incomplete[:5]]
        figures.problems.append(f"at-least-once jobs not completed: {described}")
    figures.not_completed = len(incomplete)

    figures.left_claimed = ClaimedExecution.objects.count()
    if figures.left_claimed:
        figures.problems.append(f"{figures.left_claimed} jobs left claimed")

    # docs/explanation/guarantees.md: a pruned worker that resumes starts nothing more; the
    # runs it had begun (task_started sent) before it froze carry on, and may exceed the
    # limit a while.
    begun = {(label, pid): at for label, pid, at in record.begun()}
    late = [
        (label, pid) for (label, pid), at in begun.items() if pid in frozen and at > frozen[pid]
    ]
    if late:
        figures.problems.append(f"a pruned worker began {len(late)} runs after it froze: {late}")
    figures.late_starts = len(late)

    def in_flight(run: Run) -> bool:
        return run.pid in frozen and begun.get((run.label, run.pid), run.started) <= frozen[run.pid]

    limited = [r for r in runs if r.key and not in_flight(r)]
    violations = limit_violations(limited, deaths, released=set(figures.released_by_hand))
    if violations:
        figures.problems.append(
            f"concurrency limit {LIMIT} exceeded: {violations[:5]}; "
            f"jobs released by hand: {figures.released_by_hand}"
        )
    figures.limit_violations = len(violations)
    return figures


def _describe(pk: int) -> str:
    job = Job.objects.get(pk=pk)
    failure = FailedExecution.objects.filter(job_id=pk).first()
    error = failure and f"{failure.exception_class}: {failure.message}\n{failure.backtrace[-800:]}"
    workers = [attempt.get("worker_id") for attempt in job.attempts]
    label = job.arguments["args"][0]
    return f"job {pk} {label} attempts by {workers} finished_at={job.finished_at} failed={error}"


def _ended(label: str, runs: list[Run]) -> bool:
    return any(run.label == label and run.ended is not None for run in runs)


def limit_violations(
    runs: list[Run], deaths: dict[int, float], released: set[str] = frozenset()
) -> list[str]:
    """Runs that started while ``LIMIT`` others with their key were running.

    A run with no end ended when its process died: at the kill, or when the test saw
    an orphaned worker gone (later than it really ended, so never an undercount).
    Jobs ``released`` by hand may start over the limit (docs/reference/concurrency.md);
    they count as running all the same, so no other job may start beside them.
    """
    by_key: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
    for run in runs:
        end = run.ended if run.ended is not None else deaths.get(run.pid, float("inf"))
        by_key[run.key].append((run.started, 1, run.label))
        by_key[run.key].append((end, -1, run.label))
    violations = []
    for key, events in by_key.items():
        running = 0
        for at, change, label in sorted(events):  # an end sorts before a start at the same time
            running += change
            if change > 0 and running > LIMIT and label not in released:
                violations.append(f"{label} started with {running - 1} others on {key} at {at}")
    return violations


def check_timeouts(figures: Figures, record: Record) -> Figures:
    """Timeouts of tasks that swallow exceptions: no write outside the job's attempts (none
    after it failed for good, none between an attempt's end and its retry), and no two
    holders of a ``to=1`` slot at once, from the first to the last row each run wrote."""
    attempts: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for arguments, tried in Job.objects.values_list("arguments", "attempts"):
        for attempt in tried:
            start, end = (parse_datetime(attempt[k]) for k in ("started_at", "finished_at"))
            attempts[arguments["args"][0]].append((start.timestamp(), end.timestamp()))
    rows = [row for row in record._rows() if row[5]]  # the runs of a concurrency key
    late = [
        (label, at)
        for label, _, _, _, at, _ in rows
        if not any(start <= at <= end for start, end in attempts[label])
    ]
    if late:
        figures.problems.append(f"{len(late)} writes outside their job's attempts: {late[:5]}")
    figures.late_writes = len(late)
    overlaps = slot_overlaps(rows)
    if overlaps:
        figures.problems.append(f"to=1 slots held twice at once: {overlaps[:5]}")
    figures.slot_overlaps = len(overlaps)
    return figures


def slot_overlaps(rows: list[tuple]) -> list[str]:
    """Runs that started while another run of their key (to=1) was still writing."""
    spans, open_spans = [], {}
    for label, event, pid, thread, at, key in rows:
        ident = (label, pid, thread)
        if event == "start":
            if ident in open_spans:
                spans.append(open_spans.pop(ident))
            open_spans[ident] = [key, label, at, at]
        elif ident in open_spans:
            open_spans[ident][3] = at
            if event == "end":
                spans.append(open_spans.pop(ident))
    spans += open_spans.values()
    by_key: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
    for key, label, start, end in spans:
        by_key[key] += [(start, 1, label), (end, -1, label)]
    overlaps = []
    for key, events in by_key.items():
        holding = 0
        for at, change, label in sorted(events):
            holding += change
            if change > 0 and holding > 1:
                overlaps.append(f"{label} started beside another holder of {key} at {at}")
    return overlaps


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) == pid and stat[0] not in ("Z", "X"):
                    found.append(int(entry.name))
    return found
