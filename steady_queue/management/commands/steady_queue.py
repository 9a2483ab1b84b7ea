"""``manage.py steady_queue``: run the supervisor and the processes it forks."""

from __future__ import annotations

import logging
import sys

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import InterfaceError, OperationalError

import steady_queue
from steady_queue import configuration, preflight
from steady_queue.ops import backends
from steady_queue.processes.per_database import run_per_database
from steady_queue.processes.pidfile import SupervisorAlreadyRunning
from steady_queue.processes.reloading import reload_on_changes
from steady_queue.processes.supervisor import Supervisor

LOG_FORMAT = "%(asctime)s %(levelname)s [%(name)s] pid=%(process)d %(message)s"
LOG_LEVELS = {0: logging.WARNING, 1: logging.INFO}


class Command(BaseCommand):
    requires_migrations_checks = True
    help = (
        "Run Steady Queue: a supervisor that forks the configured workers, dispatchers and "
        "recurring tasks scheduler, and stops them on TERM/INT (gracefully) or QUIT (at once)."
    )

    def add_arguments(self, parser) -> None:
        _add_role_arguments(parser)
        parser.add_argument(
            "--config",
            metavar="DOTTED_PATH",
            help=(
                "Import path of a Configuration.Options to use instead of "
                "settings.STEADY_QUEUE, e.g. myproject.queues.BACKGROUND_ONLY."
            ),
        )
        parser.add_argument(
            "--backend",
            action="append",
            metavar="ALIAS",
            help=(
                "Serve the queue database of this TASKS backend (its OPTIONS['database'], "
                "else steady_queue.database). Repeat it to serve several: a supervisor "
                "runs for each database. Default: steady_queue.database."
            ),
        )
        parser.add_argument(
            "--mode",
            choices=["fork", "async"],
            default="fork",
            help="fork (default): a process for each; async: threads of this one process.",
        )
        parser.add_argument(
            "--liveness-file",
            metavar="PATH",
            help=(
                "Touch PATH at every turn of the supervisor's loop, for a liveness probe "
                "(manage.py steady_queue_health --liveness PATH); default: "
                "steady_queue.liveness_file."
            ),
        )
        _add_reload_argument(parser)

    def handle(self, *args, **options) -> None:
        _configure_logging(options["verbosity"])
        if options["liveness_file"]:
            steady_queue.liveness_file = options["liveness_file"]
        try:
            config = configuration.load(options["config"])
        except ImproperlyConfigured as exc:
            raise CommandError(f"Invalid Steady Queue configuration:\n{exc}") from exc
        if problem := preflight.backend_problem():
            raise CommandError(problem, returncode=2)
        databases = list(dict.fromkeys(_database_of(alias) for alias in options["backend"] or []))
        _check_tables(databases or [steady_queue.database])
        if options["reload"]:
            reload_on_changes()  # returns only in a fork, which runs what follows

        def supervise() -> int:
            supervisor = Supervisor.from_configuration(
                config,
                only_workers=options["only_workers"],
                only_dispatchers=options["only_dispatchers"],
                skip_recurring=options["skip_recurring"],
                mode=options["mode"],
            )
            try:
                supervisor.start()
            except SupervisorAlreadyRunning as exc:
                raise CommandError(str(exc)) from exc
            return 0

        if len(databases) > 1:
            if code := run_per_database(databases, supervise):
                sys.exit(code)
            return
        if databases:  # before anything reads the database, and before any fork
            steady_queue.database = databases[0]
        supervise()


def _add_role_arguments(parser) -> None:
    """Which of the supervisor's kinds of process run: all by default."""
    only = parser.add_mutually_exclusive_group()
    only.add_argument(
        "--only-workers",
        action="store_true",
        help="Run only the workers: no dispatchers and no scheduler.",
    )
    only.add_argument(
        "--only-dispatchers",
        action="store_true",
        help="Run only the dispatchers, and the scheduler unless --skip-recurring.",
    )
    parser.add_argument(
        "--skip-recurring",
        action="store_true",
        help="Do not run the scheduler that enqueues recurring tasks.",
    )


def _add_reload_argument(parser) -> None:
    parser.add_argument(
        "--reload",
        action="store_true",
        help=(
            "For development: restart the supervisor when a Python file of the project "
            "changes, after a graceful stop (docs/how-to/develop-with-reload.md)."
        ),
    )


def _database_of(alias: str) -> str:
    try:
        return backends.database_of(alias)
    except backends.BackendError as exc:
        raise CommandError(str(exc)) from exc


def _check_tables(databases: list[str]) -> None:
    """Refuse to start on a database without the tables: its workers would only idle."""
    for database in databases:
        try:
            problem = preflight.tables_problem(database)
        except (OperationalError, InterfaceError) as exc:
            # Unreachable now: the supervisor waits for it as for any outage.
            logging.getLogger("steady_queue.processes").warning(
                "Could not check the tables of database %r before starting: %s", database, exc
            )
            continue
        if problem:
            raise CommandError(problem, returncode=2)


def _configure_logging(verbosity: int) -> None:
    """Show the steady_queue log on stderr, unless the project's LOGGING already handles it."""
    logger = logging.getLogger("steady_queue")
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logger.addHandler(handler)
    logger.setLevel(LOG_LEVELS.get(verbosity, logging.DEBUG))
