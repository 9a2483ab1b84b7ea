"""``manage.py steady_queue_jobs``: list, retry, discard, cancel, dispatch or release jobs;
edit or duplicate one job, or enqueue a task (``management/one_job.py``)."""

from __future__ import annotations

import argparse

from django.core.management.base import BaseCommand, CommandError

from steady_queue.encryption import ENCRYPTED, is_sealed
from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.management.one_job import ONE_JOB_ACTIONS, OneJob, add_one_job_arguments
from steady_queue.models import states
from steady_queue.ops import audit, backends, jobs
from steady_queue.ops.durations import argument as duration
from steady_queue.ops.selection import JobSelection, SelectionError

# Rows a dry run shows of what it would change; rows ``list`` shows unless --limit.
PREVIEW_ROWS = 10
LIST_ROWS = 50
# ``list`` counts up to this many matching jobs, then says "more than".
COUNT_CAP = 10_000
# What cancelling a running job does (Job.cancel): it is not stopped on the spot.
ASKED_TO_STOP = (
    "Running jobs are asked to stop: each ends when its task next checks cancelled(), "
    "or is interrupted after steady_queue.cancel_grace."
)


class Command(BaseCommand):
    help = (
        "List jobs, or retry, discard, cancel, dispatch or release them, a batch at a time, "
        "like the dashboard; edit or duplicate one job (edit ID, duplicate ID), or enqueue "
        "a task (enqueue TASK_PATH) with --args/--kwargs JSON. "
        "Actions are a dry run unless --yes: they print what would change and change nothing. "
        "Real runs are written to the dashboard's audit log as the OS user."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "action",
            choices=["list", "retry", "discard", "cancel", "dispatch", "release", *ONE_JOB_ACTIONS],
        )
        add_one_job_arguments(parser)
        _status_argument(parser)
        parser.add_argument(
            "--task", action="append", default=[], metavar="PATH", help="Task path (repeatable)."
        )
        parser.add_argument(
            "--queue", action="append", default=[], metavar="NAME", help="Queue (repeatable)."
        )
        parser.add_argument(
            "--id",
            action="append",
            default=[],
            type=int,
            dest="ids",
            metavar="ID",
            help="Job id (repeatable).",
        )
        parser.add_argument(
            "--older-than",
            type=duration,
            metavar="DURATION",
            help='Only jobs that entered their status longer ago (e.g. "1h", "2d").',
        )
        parser.add_argument(
            "--error", metavar="TEXT", help="Failed jobs whose error class or message has TEXT."
        )
        parser.add_argument("--yes", action="store_true", help="Really do it (default: dry run).")
        parser.add_argument(
            "--force",
            action="store_true",
            help="release only: run the jobs even where no slot of their key is free, "
            "over the concurrency limit.",
        )
        parser.add_argument(
            "--limit", type=int, default=LIST_ROWS, help=f"Rows to list (default {LIST_ROWS})."
        )
        parser.add_argument(
            "--batch-size",
            type=_positive,
            default=jobs.BATCH_SIZE,
            help="Jobs changed per transaction.",
        )
        backends.add_argument(parser)

    def handle(self, *args, **options) -> None:
        self.verbosity = options["verbosity"]
        try:
            self.target = backends.resolve(options["backend"])
            backends.check_queues(self.target, options["queue"])
        except backends.BackendError as exc:
            raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc
        with self.target.active():
            if options["action"] in ONE_JOB_ACTIONS:
                return OneJob(self, self.target).handle(options)
            if options["subject"] is not None:
                raise CommandError(
                    f"{options['action']} takes no {options['subject']!r}: choose jobs with "
                    "--id, --status, --task, --queue."
                )
            self._handle(options)

    def _handle(self, options: dict) -> None:
        try:
            if options["action"] == "list":
                return self._list(_selection(options), options["limit"])
            action = jobs.ACTIONS[options["action"]]
            # An action's one status (or its default: failed for retry) need not be spelled out.
            if options["status"] is None and len(action.statuses) == 1:
                options["status"] = action.statuses[0]
            elif options["status"] is None:
                options["status"] = action.default_status
            selection = _selection(options)
            action.check(selection, options["action"])
            if options["force"] and options["action"] != "release":
                raise SelectionError("--force applies to release only.")
        except SelectionError as exc:
            raise CommandError(str(exc)) from exc
        name, force = options["action"], options["force"]
        if options["yes"]:
            self._run(name, action, selection, options["batch_size"], force)
        else:
            self._dry_run(name, selection, _release_terms(name, force))

    def _list(self, selection: JobSelection, limit: int) -> None:
        matching = selection.jobs()
        count = matching[: COUNT_CAP + 1].count()
        if count > COUNT_CAP:
            self.stdout.write(f"More than {selection.describe(COUNT_CAP)} match.")
        else:
            self.stdout.write(f"{selection.describe(count)} match{'es' if count == 1 else ''}.")
        self._rows(matching, limit)

    def _dry_run(self, name: str, selection: JobSelection, terms: str = "") -> None:
        matching = selection.jobs()
        count = matching.count()
        self.stdout.write(f"Dry run: would {name} {selection.describe(count)}{terms}.")
        if name == "cancel" and selection.status == states.RUNNING:
            self.stdout.write(ASKED_TO_STOP)
        self._rows(matching, PREVIEW_ROWS)
        self.stdout.write(f"Nothing was changed. Run again with --yes to {name} them.")

    def _run(
        self, name: str, action: jobs.Action, selection: JobSelection, size: int, force: bool
    ) -> None:
        done = [0]

        def progress(count: int) -> None:
            done[0] = count
            if self.verbosity >= 2:
                self.stderr.write(f"{count:,} jobs {action.past_tense} so far")

        try:
            jobs.run(action, selection, batch_size=size, progress=progress, force=force)
        except Exception as exc:
            message = (
                f"{selection.describe(done[0])} {action.past_tense}, then an error stopped "
                f"the action, leaving the others as they were: {type(exc).__name__}: {exc}"
            )
            self._audit(name, selection, done[0], False, message, force)
            raise CommandError(message) from exc
        message = f"{selection.describe(done[0])} {action.past_tense}."
        if action.method == "release_all":
            message += _still_blocked(selection)
        if name == "cancel" and selection.status == states.RUNNING:
            message += f" {ASKED_TO_STOP}"
        self.stdout.write(message[0].upper() + message[1:])
        self._audit(name, selection, done[0], True, message, force)

    def _audit(
        self,
        name: str,
        selection: JobSelection,
        count: int,
        succeeded: bool,
        message: str,
        force: bool = False,
    ) -> None:
        link_to = ("job-list", selection.status) if selection.status else ()
        source = {"source": "manage.py steady_queue_jobs", **({"force": True} if force else {})}
        written = audit.record(
            f"{name} all over the limit" if force else f"{name} all",
            selection.describe(),
            affected=count,
            succeeded=succeeded,
            message=message,
            details={**source, **selection.filters()},
            link_to=link_to,
            backend=self.target,
        )
        if written:
            self.stdout.write(f"Recorded in the audit log as {audit.actor()}.")
        else:
            self.stdout.write("The dashboard app is not installed: no audit entry was written.")

    def _rows(self, matching, limit: int) -> None:
        rows = list(matching.with_execution().order_by("-pk")[: max(limit, 0)])
        for job in rows:
            self.stdout.write(_row(job))
        if rows:
            self.stdout.write(f"({len(rows)} shown, newest first)")


def _status_argument(parser) -> None:
    parser.add_argument(
        "--status",
        # The old spellings (pending, in-progress) still work: scripts keep running.
        choices=states.words(accepting_aliases=True),
        metavar="{" + ",".join(states.words()) + "}",
        help="Only jobs in this status.",
    )


def _release_terms(name: str, force: bool) -> str:
    if name != "release":
        return ""
    return " over their concurrency limit" if force else " where a slot of their key is free"


def _still_blocked(selection: JobSelection) -> str:
    """What a release without --force left blocked, for want of a free slot."""
    left = selection.jobs().count()
    if not left:
        return ""
    return (
        f" {selection.describe(left)} stay blocked: no slot of their key is free. "
        "Run again with --force to run them over the concurrency limit."
    )


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number.")
    return int(text)


def _selection(options: dict) -> JobSelection:
    return JobSelection(
        status=options["status"],
        tasks=options["task"],
        queues=options["queue"],
        ids=options["ids"],
        older_than=options["older_than"],
        error=options["error"],
    )


def _row(job) -> str:
    failed = getattr(job, "failed_execution", None) if job.finished_at is None else None
    message = ENCRYPTED if failed and is_sealed(failed.message) else getattr(failed, "message", "")
    error = f"  {failed.exception_class}: {message}"[:120] if failed else ""
    cancelled = failed is not None and failed.exception_class == CANCELLED_CLASS
    state = states.CANCELLED if cancelled else job.state
    enqueued = job.created_at.isoformat(timespec="seconds")
    return f"{job.pk:>10}  {state:<9}  {job.queue_name:<12}  {job.task_path}  {enqueued}{error}"
