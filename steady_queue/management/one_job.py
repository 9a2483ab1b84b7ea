"""``steady_queue_jobs edit ID``, ``duplicate ID`` and ``enqueue TASK_PATH``.

A dry run until ``--yes``, like the command's other changing actions: it checks every
value as ``enqueue()`` would and shows the diff (or the job it would enqueue), writing
nothing. A refused value exits with status 2 (a usage error), a job that cannot be
changed (started, ended, being claimed, a unique key another job holds) with 1; in
both cases nothing was written. Real runs are audited: ``edit`` and ``duplicate`` by
the engine itself (``Job.edit()``, ``Job.duplicate()``), ``enqueue`` here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.management.base import CommandError

from steady_queue.ops import audit, backends, job_changes

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from steady_queue.models import Job

ONE_JOB_ACTIONS = ("edit", "duplicate", "enqueue")
#: Exit status of a change refused for the job's state (a usage error is backends.USAGE_ERROR).
REFUSED = 1
# The options each action takes besides --args/--kwargs (the others are refused).
_TAKES = {
    "edit": {"priority", "queue", "run_after", "labels"},
    "duplicate": set(),
    "enqueue": {"priority", "queue", "run_after", "labels"},
}


def add_one_job_arguments(parser) -> None:
    parser.add_argument(
        "subject",
        nargs="?",
        metavar="ID|TASK_PATH",
        help="edit, duplicate: the job's id; enqueue: the task's dotted path.",
    )
    # Not dest "args": Django's execute(*args, **options) keeps that name for itself.
    parser.add_argument(
        "--args", dest="call_args", metavar="JSON", help="edit, duplicate, enqueue: a JSON list."
    )
    parser.add_argument(
        "--kwargs",
        dest="call_kwargs",
        metavar="JSON",
        help="edit, duplicate, enqueue: a JSON object.",
    )
    parser.add_argument("--priority", type=int, metavar="N", help="edit, enqueue: the priority.")
    parser.add_argument(
        "--run-after",
        metavar="ISO",
        help="edit, enqueue: when it is due, ISO 8601 with an offset, or 'now'.",
    )
    parser.add_argument(
        "--labels",
        metavar="JSON",
        help="edit: the job's labels instead of its own; enqueue: its labels (a JSON list).",
    )


class OneJob:
    """Run one of ``ONE_JOB_ACTIONS`` for the command ``command``."""

    def __init__(self, command: BaseCommand, target: backends.Target):
        self.command = command
        self.target = target

    def handle(self, options: dict) -> None:
        action = options["action"]
        try:
            values = self._values(action, options)
            getattr(self, f"_{action}")(options["subject"], values, options["yes"])
        except job_changes.ChangeError as exc:
            code = backends.USAGE_ERROR if exc.usage else REFUSED
            raise CommandError(str(exc), returncode=code) from exc

    def _values(self, action: str, options: dict) -> job_changes.Values:
        if options["subject"] is None:
            what = "TASK_PATH" if action == "enqueue" else "ID"
            raise job_changes.ChangeError(
                f"{action} needs {what}: steady_queue_jobs {action} {what}."
            )
        refused = [
            option
            for option in ("status", "task", "ids", "older_than", "error")
            if options[option] not in (None, [])
        ]
        if options["force"]:
            refused.append("force")
        given = {
            "priority": options["priority"],
            "run_after": options["run_after"],
            "labels": options["labels"],
        }
        given["queue"] = options["queue"][-1] if options["queue"] else None
        refused += [name for name, value in given.items() if value is not None]
        refused = [name for name in refused if name not in _TAKES[action]]
        if len(options["queue"]) > 1:
            refused.append("queue (given more than once)")
        if refused:
            names = ", ".join(f"--{name.replace('_', '-')}" for name in refused)
            raise job_changes.ChangeError(f"{action} does not take {names}.")
        return job_changes.Values.parse(
            args=options["call_args"], kwargs=options["call_kwargs"], **given
        )

    # -- the actions ------------------------------------------------------------------

    def _edit(self, subject: str, values: job_changes.Values, yes: bool) -> None:
        job = job_changes.job(_job_id(subject))
        if not values.given():
            raise job_changes.ChangeError(
                "edit needs something to change: --args, --kwargs, --priority, --queue, "
                "--run-after or --labels."
            )
        if not yes:
            changes = job_changes.preview_edit(job, values)
            self._out(f"Dry run: would edit job {job.pk} ({job.task_path}, {job.state}).")
            self._diff(changes)
            self._out("Nothing was changed. Run again with --yes to edit it.")
            return
        changes = job_changes.edit(job, values)
        if not changes:
            self._out(f"Job {job.pk} already has these values: nothing was changed.")
            return
        self._out(f"Job {job.pk} edited.")
        self._diff(changes)
        self._audited(written=audit.available())

    def _duplicate(self, subject: str, values: job_changes.Values, yes: bool) -> None:
        job = job_changes.job(_job_id(subject))
        planned = job_changes.planned_duplicate(job, values)
        if not yes:
            self._out(f"Dry run: would enqueue a copy of job {job.pk} ({job.state}):")
            self._planned(planned)
            self._out("Nothing was changed. Run again with --yes to enqueue it.")
            return
        result = job_changes.duplicate(job, values)
        self._out(f"Job {job.pk} duplicated as job {result.id}.")
        self._audited(written=audit.available())

    def _enqueue(self, subject: str, values: job_changes.Values, yes: bool) -> None:
        backend = self.target.backend if self.target.explicit else None
        task = job_changes.with_options(job_changes.task(subject), values, backend)
        planned = job_changes.planned_enqueue(task, values)
        if not yes:
            self._out("Dry run: would enqueue:")
            self._planned(planned)
            self._out("Nothing was changed. Run again with --yes to enqueue it.")
            return
        result = job_changes.enqueue(task, values)
        message = f"Job {result.id} enqueued ({task.module_path})."
        self._out(message)
        args, kwargs = values.call()
        from steady_queue import arguments, encryption

        stored = arguments.serialize(args, kwargs)
        if encryption.is_encrypted(task.module_path):  # the audit log keeps no plaintext
            stored = encryption.seal(stored)

        written = audit.record(
            "enqueue",
            f"job {result.id}",
            affected=1,
            succeeded=True,
            message=message,
            details={
                "source": "manage.py steady_queue_jobs",
                "task": task.module_path,
                "after": {
                    "arguments": stored,
                    "queue_name": task.queue_name,
                    "priority": task.priority,
                },
            },
            link_to=("job-detail", str(result.id)),
            backend=self.target,
        )
        self._audited(written)

    # -- output ---------------------------------------------------------------------------

    def _out(self, line: str) -> None:
        self.command.stdout.write(line)

    def _diff(self, changes: dict[str, tuple[Any, Any]]) -> None:
        if not changes:
            self._out("  (no change: the job already has these values)")
        for field, (before, after) in changes.items():
            self._out(f"  {field}: {job_changes.shown(before)} -> {job_changes.shown(after)}")

    def _planned(self, job: Job) -> None:
        self._out(f"  task: {job.task_path}")
        for field in ("arguments", "queue_name", "priority", "scheduled_at", "labels"):
            self._out(f"  {field}: {job_changes.shown(getattr(job, field))}")

    def _audited(self, written: bool) -> None:
        if written:
            self._out(f"Recorded in the audit log as {audit.actor()}.")
        else:
            self._out("The dashboard app is not installed: no audit entry was written.")


def _job_id(subject: str) -> int:
    if not subject.isdigit():
        raise job_changes.ChangeError(f"{subject!r} is not a job id (a whole number).")
    return int(subject)
