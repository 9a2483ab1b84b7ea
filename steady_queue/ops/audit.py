"""Entries in the audit log for actions run from the command line.

The actor is the operating system's user (``os:alice``): a command has no Django user.
The engine keeps no audit log of its own: it announces each operation with
``operation_performed``, and the dashboard (whose audit log it is) records it. Without
the dashboard nobody listens; the commands say so and go on.
"""

from __future__ import annotations

import contextlib
import getpass
import os
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from django.dispatch import Signal

#: Sent after each operation a command ran for real, with ``actor``, ``action``,
#: ``target``, ``affected``, ``succeeded``, ``message``, ``details`` and ``link_to``
#: (the name and arguments of the dashboard page of what was acted on) and ``backend``
#: (the TASKS alias whose queue database it acted on; its dashboard mount, if any, is
#: the one to link to). A receiver returns True when it recorded the entry.
operation_performed = Signal()

if TYPE_CHECKING:
    from .backends import Target


def available() -> bool:
    """Whether an audit log listens (the dashboard app is installed)."""
    return operation_performed.has_listeners()


# Who the operations announced inside ``acting_as()`` are done for (None: the OS user).
_acting_as: ContextVar[str | None] = ContextVar("steady_queue_audit_actor", default=None)


@contextlib.contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Announce the operations of this block as done by ``name`` (a dashboard user).

    The engine's own changes (``Job.edit()``, ``duplicate()``, ``retry(args=...)``)
    announce themselves; a caller with a user of its own (the dashboard) names it here.
    """
    token = _acting_as.set(name)
    try:
        yield
    finally:
        _acting_as.reset(token)


def actor() -> str:
    """Who the audit log names: the name given to ``acting_as()``, else the OS user."""
    if (named := _acting_as.get()) is not None:
        return named
    try:
        return f"os:{getpass.getuser()}"
    except (KeyError, OSError):  # a container's uid without a passwd entry
        return f"os:uid-{os.getuid()}"


def record(
    action: str,
    target: str,
    *,
    affected: int,
    succeeded: bool,
    message: str,
    details: dict[str, Any],
    link_to: tuple[str, ...] = (),
    backend: Target | None = None,
    as_actor: str | None = None,
) -> bool:
    """Announce the operation to the audit log; return whether an entry was written.

    ``backend``: the command's ``--backend`` target, kept in the details (the entry
    must say which queue database was changed: the audit log is shared by them all).
    ``as_actor``: who acted, when not this process's OS user (a dashboard's user).
    """
    if backend is not None:
        details = {**details, "backend": backend.backend, "database": backend.database}
    responses = operation_performed.send(
        None,
        actor=as_actor or actor(),
        action=action,
        target=target,
        affected=affected,
        succeeded=succeeded,
        message=message,
        details=details,
        link_to=link_to,
        backend=backend.backend if backend is not None and backend.explicit else None,
    )
    return any(written is True for _, written in responses)


def announce(
    action: str,
    target: str,
    *,
    message: str,
    details: dict[str, Any],
    link_to: tuple[str, ...] = (),
    backend: str | None = None,
    affected: int = 1,
) -> bool:
    """Announce a change the engine itself made (``Job.edit()``...); True if recorded.

    ``details`` carries the raw values (arguments as stored): the audit log masks what
    its masking rules hide (see the dashboard's ``record_operation``).
    """
    responses = operation_performed.send(
        None,
        actor=actor(),
        action=action,
        target=target,
        affected=affected,
        succeeded=True,
        message=message,
        details=details,
        link_to=link_to,
        backend=backend,
    )
    return any(written is True for _, written in responses)
