"""``manage.py steady_queue_recurring``: list recurring tasks; run, pause or resume one;
create, edit or delete a schedule made at run time (docs/reference/runtime-schedules.md)."""

from __future__ import annotations

import json
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from steady_queue.exceptions import ScheduleError
from steady_queue.models import RecurringTask
from steady_queue.ops import audit, backends, recurring

# What each action tells the dry run it would do, and the audit log calls it (as the
# dashboard's recurring page does). pause and resume are disable and enable by their
# console names.
DRY_RUNS = {
    "run": "enqueue recurring task {key} ({task}) once now; its schedule goes on as before",
    "enable": "enable recurring task {key}: the schedulers enqueue it again from {next}",
    "disable": "disable recurring task {key}: the schedulers stop enqueueing it, from {next}",
    "unschedule": "delete the dynamic recurring schedule {key} ({task}); its jobs stay",
}
AUDITED_AS = {
    "run": "run now",
    "enable": "enable",
    "disable": "disable",
    "schedule": "schedule",
    "unschedule": "unschedule",
}
SYNONYMS = {"pause": "disable", "resume": "enable"}
ACTIONS = ["list", "run", "pause", "resume", "enable", "disable", "schedule", "unschedule"]


class Command(BaseCommand):
    help = (
        "List recurring tasks with their schedule, state and runs; run one now, pause or "
        "resume one (also: disable, enable), like the dashboard; create or edit a schedule "
        "made at run time (schedule KEY --task PATH --cron TEXT ...) or delete one "
        "(unschedule KEY). Every action but list is a dry run unless --yes. Real runs are "
        "written to the dashboard's audit log as the OS user."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=ACTIONS)
        parser.add_argument("key", nargs="?", help="The key of the recurring task.")
        parser.add_argument("--yes", action="store_true", help="Really do it (default: dry run).")
        schedule = parser.add_argument_group("schedule (a schedule made at run time)")
        schedule.add_argument("--task", help="The task's dotted path.")
        schedule.add_argument("--cron", help="Its cron schedule (croniter's syntax).")
        schedule.add_argument(
            "--args", dest="args_json", default="[]", help="Positional arguments, a JSON list."
        )
        schedule.add_argument(
            "--kwargs", dest="kwargs_json", default="{}", help="Keyword arguments, a JSON object."
        )
        schedule.add_argument("--queue", help="The queue (default: the task's).")
        schedule.add_argument("--priority", type=int, help="The priority (default: the task's).")
        schedule.add_argument("--timezone", help="An IANA zone (default: settings.TIME_ZONE).")
        schedule.add_argument("--description", default="", help="A word for the console.")
        schedule.add_argument(
            "--catch-up", type=float, help="Seconds: missed runs younger than this are enqueued."
        )
        backends.add_argument(parser)

    def handle(self, *args, **options) -> None:
        try:
            self.target = backends.resolve(options["backend"])
        except backends.BackendError as exc:
            raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc
        action = SYNONYMS.get(options["action"], options["action"])
        with self.target.active():
            if action == "schedule":
                return self._schedule(options)
            self._handle(action, options["key"], options["yes"])

    def _handle(self, action: str, key: str | None, really: bool) -> None:
        if action == "list":
            return self._list()
        task = self._find(action, key)
        if not really:
            return self._dry_run(action, task)
        if action == "run":
            outcome = recurring.run_now(task)
        elif action == "unschedule":
            outcome = recurring.delete(task.key)
        else:
            outcome = recurring.set_enabled(task, action == "enable")
        self._report(action, task.key, task.task_path, outcome)

    def _find(self, action: str, key: str | None) -> RecurringTask:
        if not key:
            raise CommandError(f"{action} needs the key of a recurring task.")
        task = recurring.find(key)
        if task is None:
            raise CommandError(
                f"No recurring task {key!r} in queue database {self.target.database!r}: "
                "see manage.py steady_queue_recurring list."
            )
        if action == "unschedule" and task.static:
            raise CommandError(
                f"Recurring task {key!r} is declared in code with @recurring: it cannot be "
                "deleted at run time (pause it instead)."
            )
        return task

    def _schedule(self, options: dict) -> None:
        if not options["key"] or not options["task"] or not options["cron"]:
            raise CommandError("schedule needs a key, --task and --cron.")
        try:
            preview = recurring.preview(options["key"], options["task"], **_fields(options))
        except ScheduleError as exc:
            raise CommandError(f"Nothing was saved: {exc}") from exc
        if not options["yes"]:
            return self._show_preview(preview)
        outcome = recurring.save(preview.recurrence)
        self._report("schedule", preview.recurrence.key, options["task"], outcome)

    def _show_preview(self, preview: recurring.Preview) -> None:
        recurrence = preview.recurrence
        verb = "update" if preview.exists else "create"
        zone = recurrence.timezone or "settings.TIME_ZONE"
        self.stdout.write(
            f"Dry run: would {verb} the dynamic recurring schedule {recurrence.key}: "
            f"{recurrence.task.module_path} on {recurrence.schedule!r} ({preview.words}) "
            f"in {zone}.\nNext runs:"
        )
        for moment in preview.next_runs:
            self.stdout.write(f"  {_time(moment)}")
        self.stdout.write("Nothing was changed. Run again with --yes to schedule it.")

    def _report(self, action: str, key: str, task_path: str, outcome) -> None:
        if outcome.succeeded:
            self.stdout.write(outcome.message)
        if outcome.affected or not outcome.succeeded:
            self._audit(action, key, task_path, outcome)
        if not outcome.succeeded:
            raise CommandError(outcome.message)

    def _list(self) -> None:
        self.stdout.write(
            f"{'KEY':<24} {'STATE':<8} {'NEXT RUN':<25} {'LAST RUN':<25} {'KIND':<8} SCHEDULE"
        )
        for task in recurring.tasks():
            state = "enabled" if task.enabled else "disabled"
            upcoming = task.upcoming_run_at if task.enabled else None
            kind = "dynamic" if task.dynamic else "declared"
            zone = f" ({task.timezone})" if task.timezone else ""
            self.stdout.write(
                f"{task.key:<24} {state:<8} {_time(upcoming):<25} {_time(task.last_run_at):<25} "
                f"{kind:<8} {task.schedule}{zone}  {task.task_path}"
            )

    def _dry_run(self, action: str, task: RecurringTask) -> None:
        upcoming = task.upcoming_run_at
        when = f"its next run at {_time(upcoming)}" if upcoming else "its next run"
        if action in ("enable", "disable") and task.enabled == (action == "enable"):
            self.stdout.write(f"Recurring task {task.key} is already {action}d.")
            return
        would = DRY_RUNS[action].format(key=task.key, task=task.task_path, next=when)
        self.stdout.write(
            f"Dry run: would {would}.\nNothing was changed. Run again with --yes to {action} it."
        )

    def _audit(self, action: str, key: str, task_path: str, outcome: recurring.Outcome) -> None:
        written = audit.record(
            AUDITED_AS[action],
            f"recurring task {key}",
            affected=outcome.affected,
            succeeded=outcome.succeeded,
            message=outcome.message,
            details={"source": "manage.py steady_queue_recurring", "task": task_path},
            link_to=() if action == "unschedule" else ("recurring-detail", key),
            backend=self.target,
        )
        if written:
            self.stdout.write(f"Recorded in the audit log as {audit.actor()}.")
        else:
            self.stdout.write("The dashboard app is not installed: no audit entry was written.")


def _fields(options: dict) -> dict:
    """The schedule's fields from the options; JSON that does not parse is a ScheduleError."""
    loaded = {}
    for name in ("args", "kwargs"):
        try:
            loaded[name] = json.loads(options[f"{name}_json"])
        except ValueError as exc:
            raise ScheduleError(f"--{name} is not JSON: {exc}.", field=name) from exc
    catch_up = options["catch_up"]
    return {
        **loaded,
        "cron": options["cron"],
        "queue_name": options["queue"],
        "priority": options["priority"],
        "timezone": options["timezone"],
        "description": options["description"],
        "catch_up": timedelta(seconds=catch_up) if catch_up is not None else None,
    }


def _time(moment) -> str:
    return moment.isoformat(timespec="seconds") if moment else "-"
