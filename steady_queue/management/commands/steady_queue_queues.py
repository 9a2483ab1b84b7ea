"""``manage.py steady_queue_queues``: list queues, pause or resume one (or one task), set
or clear a fairness key's weight."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from steady_queue.models.queue import Queue
from steady_queue.ops import audit, backends, fair_weights, task_pauses
from steady_queue.ops.queues import all_queues, exists

TASK_ACTIONS = ("pause-task", "resume-task")


class Command(BaseCommand):
    help = (
        "List queues with their size, latency and state, or pause or resume one, like the "
        "dashboard; pause-task and resume-task pause a task (its dotted path) on every "
        "queue; weight KEY WEIGHT [--task PATH] sets a fairness key's weight at runtime "
        "(weight KEY --clear clears it). pause, pause-task and weight are dry runs unless "
        "--yes. Real runs are written to the dashboard's audit log as the OS user."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "action", choices=["list", "pause", "resume", "pause-task", "resume-task", "weight"]
        )
        parser.add_argument(
            "name",
            nargs="?",
            help="The queue (for pause-task and resume-task, the task; for weight, the key).",
        )
        parser.add_argument("value", nargs="?", help="weight: the key's new weight.")
        parser.add_argument(
            "--yes", action="store_true", help="Really pause or weigh (default: dry run)."
        )
        fair_weights.add_arguments(parser)
        backends.add_argument(parser)

    def handle(self, *args, **options) -> None:
        try:
            self.target = backends.resolve(options["backend"])
        except backends.BackendError as exc:
            raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc
        with self.target.active():
            if options["action"] == "weight":
                return fair_weights.run(self, options["name"], options["value"], options)
            if options["value"] is not None:
                raise CommandError(f"{options['action']} takes one name, not two.")
            self._handle(options["action"], options["name"], options["yes"])

    def _handle(self, action: str, name: str | None, really: bool) -> None:
        if action == "list":
            return self._list()
        if action in TASK_ACTIONS:
            return task_pauses.run(self, action, name, really)
        if not name:
            raise CommandError(f"{action} needs the name of a queue.")
        self._check_backend(action, name)
        if not exists(name):
            raise CommandError(f"No queue named {name!r}: it is not configured, paused or used.")
        queue = Queue(name)
        if action == "pause":
            self._pause(queue, really)
        else:
            self._resume(queue)

    def _check_backend(self, action: str, name: str) -> None:
        """Refuse a queue of another database's backend (CommandError, exit status 2)."""
        try:
            backends.check_queues(self.target, [name])
        except backends.BackendError as exc:
            # A pause made in this database by mistake can still be resumed here.
            if action == "resume" and Queue(name).is_paused:
                return
            raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc

    def _list(self) -> None:
        self.stdout.write(f"{'QUEUE':<24} {'READY':>9} {'LATENCY':>9}  STATE")
        for queue in all_queues():
            latency = f"{queue.latency.total_seconds():.0f}s" if queue.latency else "-"
            state = "paused" if queue.is_paused else "running"
            self.stdout.write(f"{queue.name:<24} {queue.size:>9,} {latency:>9}  {state}")
        task_pauses.list_paused(self)
        fair_weights.list_weights(self)

    def _pause(self, queue: Queue, really: bool) -> None:
        if queue.is_paused:
            self.stdout.write(f"Queue {queue.name} is already paused.")
            return
        if not really:
            ready = f"{queue.size:,} ready job{'' if queue.size == 1 else 's'}"
            self.stdout.write(
                f"Dry run: would pause queue {queue.name} ({ready}): workers "
                "would take no more jobs from it.\n"
                "Nothing was changed. Run again with --yes to pause it."
            )
            return
        queue.pause()
        message = f"Queue {queue.name} is paused: workers take no more jobs from it."
        self._done("pause", queue, message)

    def _resume(self, queue: Queue) -> None:
        if not queue.is_paused:
            self.stdout.write(f"Queue {queue.name} is not paused.")
            return
        queue.resume()
        self._done("resume", queue, f"Queue {queue.name} is running again.")

    def _done(self, action: str, queue: Queue, message: str) -> None:
        if self.target.explicit:
            message = f"{message} (backend {self.target.backend})"
        self.stdout.write(message)
        written = audit.record(
            action,
            f"queue {queue.name}",
            affected=1,
            succeeded=True,
            message=message,
            details={"source": "manage.py steady_queue_queues"},
            link_to=("queue-detail", queue.name),
            backend=self.target,
        )
        if written:
            self.stdout.write(f"Recorded in the audit log as {audit.actor()}.")
        else:
            self.stdout.write("The dashboard app is not installed: no audit entry was written.")
