"""``manage.py steady_queue_recurring``: list recurring tasks; run, enable or disable one."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from steady_queue.models import RecurringTask
from steady_queue.ops import audit, backends, recurring

# What each action tells the dry run it would do, and the audit log calls it (as the
# dashboard's recurring page does).
DRY_RUNS = {
    "run": "enqueue recurring task {key} ({task}) once now; its schedule goes on as before",
    "enable": "enable recurring task {key}: the schedulers enqueue it again from {next}",
    "disable": "disable recurring task {key}: the schedulers stop enqueueing it, from {next}",
}
AUDITED_AS = {"run": "run now", "enable": "enable", "disable": "disable"}


class Command(BaseCommand):
    help = (
        "List recurring tasks with their schedule, state and runs, or run one now, enable "
        "or disable one, like the dashboard. run, enable and disable are a dry run unless "
        "--yes. Real runs are written to the dashboard's audit log as the OS user."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["list", "run", "enable", "disable"])
        parser.add_argument("key", nargs="?", help="The key of the recurring task.")
        parser.add_argument("--yes", action="store_true", help="Really do it (default: dry run).")
        backends.add_argument(parser)

    def handle(self, *args, **options) -> None:
        try:
            self.target = backends.resolve(options["backend"])
        except backends.BackendError as exc:
            raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc
        with self.target.active():
            self._handle(options["action"], options["key"], options["yes"])

    def _handle(self, action: str, key: str | None, really: bool) -> None:
        if action == "list":
            return self._list()
        if not key:
            raise CommandError(f"{action} needs the key of a recurring task.")
        task = recurring.find(key)
        if task is None:
            raise CommandError(
                f"No recurring task {key!r} in queue database {self.target.database!r}: "
                "see manage.py steady_queue_recurring list."
            )
        if not really:
            return self._dry_run(action, task)
        if action == "run":
            outcome = recurring.run_now(task)
        else:
            outcome = recurring.set_enabled(task, action == "enable")
        if outcome.succeeded:
            self.stdout.write(outcome.message)
        if outcome.affected or not outcome.succeeded:
            self._audit(action, task, outcome)
        if not outcome.succeeded:
            raise CommandError(outcome.message)

    def _list(self) -> None:
        self.stdout.write(f"{'KEY':<24} {'STATE':<8} {'NEXT RUN':<25} {'LAST RUN':<25} SCHEDULE")
        for task in recurring.tasks():
            state = "enabled" if task.enabled else "disabled"
            upcoming = task.upcoming_run_at if task.enabled else None
            self.stdout.write(
                f"{task.key:<24} {state:<8} {_time(upcoming):<25} {_time(task.last_run_at):<25} "
                f"{task.schedule}  {task.task_path}"
            )

    def _dry_run(self, action: str, task: RecurringTask) -> None:
        upcoming = task.upcoming_run_at
        when = f"its next run at {_time(upcoming)}" if upcoming else "its next run"
        if action != "run" and task.enabled == (action == "enable"):
            self.stdout.write(f"Recurring task {task.key} is already {action}d.")
            return
        would = DRY_RUNS[action].format(key=task.key, task=task.task_path, next=when)
        self.stdout.write(
            f"Dry run: would {would}.\nNothing was changed. Run again with --yes to {action} it."
        )

    def _audit(self, action: str, task: RecurringTask, outcome: recurring.Outcome) -> None:
        written = audit.record(
            AUDITED_AS[action],
            f"recurring task {task.key}",
            affected=outcome.affected,
            succeeded=outcome.succeeded,
            message=outcome.message,
            details={"source": "manage.py steady_queue_recurring", "task": task.task_path},
            link_to=("recurring-detail", task.key),
            backend=self.target,
        )
        if written:
            self.stdout.write(f"Recorded in the audit log as {audit.actor()}.")
        else:
            self.stdout.write("The dashboard app is not installed: no audit entry was written.")


def _time(moment) -> str:
    return moment.isoformat(timespec="seconds") if moment else "-"
