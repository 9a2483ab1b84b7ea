"""``manage.py steady_queue_health``: exit 0 when the queue is healthy, else 1 and the problems."""

from __future__ import annotations

import json
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

import steady_queue
from steady_queue.health import HealthCheck, LivenessFile, Problem
from steady_queue.ops import backends, queues
from steady_queue.ops.durations import argument as duration

UNHEALTHY = 1


class Command(BaseCommand):
    help = (
        "Check Steady Queue's health: database reachable, a live supervisor, worker and "
        "dispatcher for the configured queues, fresh heartbeats, a scheduler when recurring "
        "tasks are enabled and, with --max-latency, queue latency. Exit 0 when healthy, "
        "else 1 with one line per problem. With --liveness, only check the supervisor's "
        "liveness file (no database query)."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--max-latency",
            type=duration,
            metavar="DURATION",
            help='Report queues whose oldest ready job waited longer (e.g. "300", "5m").',
        )
        parser.add_argument(
            "--queue",
            action="append",
            default=[],
            metavar="NAME",
            help="Check only this queue (repeatable); default: every configured queue.",
        )
        parser.add_argument(
            "--config",
            metavar="DOTTED_PATH",
            help="The Configuration.Options manage.py steady_queue runs with, if not the default.",
        )
        parser.add_argument(
            "--liveness",
            nargs="?",
            const="",
            metavar="FILE",
            help=(
                "Only check that the supervisor touched FILE (default: "
                "steady_queue.liveness_file) within --max-age."
            ),
        )
        parser.add_argument(
            "--max-age",
            type=duration,
            default=timedelta(seconds=60),
            metavar="DURATION",
            help="How old the liveness file may be (default 60s).",
        )
        parser.add_argument("--json", action="store_true", help="Print the result as JSON.")
        backends.add_argument(parser)

    def handle(self, *args, **options) -> None:
        # Exit status 2, not 1: a wrong --backend or queue is no unhealthy queue.
        try:
            target = backends.resolve(options["backend"])
            backends.check_queues(target, options["queue"])
        except backends.BackendError as exc:
            raise CommandError(str(exc), returncode=backends.USAGE_ERROR) from exc
        with target.active():
            if unknown := [q for q in options["queue"] if not queues.exists(q, options["config"])]:
                raise CommandError(
                    f"Unknown queue {unknown[0]!r}: no configured queue, pause or job has that "
                    "name (steady_queue_queues list shows them).",
                    returncode=backends.USAGE_ERROR,
                )
            problems = self._problems(options)
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(problems)))
        elif not problems:
            self.stdout.write("OK")
        for problem in [] if options["json"] else problems:
            self.stdout.write(f"{problem.name}: {problem.message}")
        if problems:
            raise SystemExit(UNHEALTHY)

    def _problems(self, options: dict) -> list[Problem]:
        if options["liveness"] is not None:
            path = options["liveness"] or steady_queue.liveness_file
            if not path:
                return [
                    Problem(
                        "liveness_missing",
                        "No liveness file: pass --liveness FILE or set steady_queue.liveness_file.",
                    )
                ]
            return LivenessFile(path).problems(options["max_age"])
        check = HealthCheck(
            max_latency=options["max_latency"], queues=options["queue"], config=options["config"]
        )
        return check.problems()


def _as_json(problems: list[Problem]) -> dict:
    return {
        "status": "failing" if problems else "ok",
        "problems": [{**problem.public(), "message": problem.message} for problem in problems],
    }
