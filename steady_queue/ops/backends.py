"""Which queue database an operations command reads and changes: ``--backend ALIAS``.

With several queue databases (a backend with ``OPTIONS["database"]``), a command
run without ``--backend`` acts on ``steady_queue.database``. A queue that only
another database's backends declare is refused there rather than acted on: pausing
``invoices`` in the wrong database would report success and pause nothing that runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured

import steady_queue

from .. import db, ours
from ..compat import DEFAULT_TASK_BACKEND_ALIAS, task_backends

#: The exit status of a command given a backend or queue it must not act on.
USAGE_ERROR = 2


class BackendError(ValueError):
    """A ``--backend`` that is no Steady Queue backend, or a queue of another database."""


@dataclass(frozen=True)
class Target:
    """The backend a command acts for, and the alias of its queue database."""

    backend: str
    database: str
    #: Whether the operator chose it with --backend (else: the default).
    explicit: bool = False

    @contextlib.contextmanager
    def active(self) -> Iterator[Target]:
        """Send the queue models' queries to this target's database inside the block."""
        with db.using_alias(self.database):
            yield self


def add_argument(parser) -> None:
    """Add ``--backend ALIAS`` to a command's parser."""
    parser.add_argument(
        "--backend",
        metavar="ALIAS",
        help=(
            "Act on the queue database of this TASKS backend (its OPTIONS['database'], "
            "else steady_queue.database). Default: steady_queue.database."
        ),
    )


def resolve(alias: str | None) -> Target:
    """The target of ``--backend alias`` (None: the project's queue database).

    Raise BackendError for an alias that is not in TASKS or not a Steady Queue backend.
    """
    if alias is None:
        return Target(DEFAULT_TASK_BACKEND_ALIAS, steady_queue.database)
    return Target(alias, database_of(alias), explicit=True)


def check_queues(target: Target, names) -> None:
    """Raise BackendError for a name only backends of other queue databases declare."""
    here = declared_in(target.database)
    for name in names:
        if name in here:
            continue
        elsewhere = sorted(
            alias
            for alias, backend in _steady_queue_backends()
            if name in (backend.queues or ()) and _database(backend) != target.database
        )
        if elsewhere:
            raise BackendError(
                f"Queue {name!r} belongs to backend {' or '.join(elsewhere)}, whose jobs are "
                f"in another queue database than {target.database!r}: run again with "
                f"--backend {elsewhere[0]}."
            )


def declared_in(database: str) -> set[str]:
    """Queue names declared (QUEUES) by the backends keeping their jobs in ``database``."""
    names: set[str] = set()
    for _, backend in _steady_queue_backends():
        if _database(backend) == database:
            names.update(backend.queues or ())
    return names


def database_of(alias: str) -> str:
    """The queue database of the Steady Queue backend ``alias``; BackendError otherwise."""
    try:
        backend = task_backends[alias]
    except ImproperlyConfigured as exc:  # Django's InvalidTaskBackend, the backport's error
        raise BackendError(f"--backend {alias!r}: there is no such backend in TASKS.") from exc
    if not ours.is_ours(backend):
        raise BackendError(f"--backend {alias!r} is not a Steady Queue backend.")
    return _database(backend)


def _database(backend) -> str:
    return backend.database or steady_queue.database


def _steady_queue_backends():
    return [(backend.alias, backend) for backend in task_backends.all() if ours.is_ours(backend)]
