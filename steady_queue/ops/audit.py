"""Entries in the audit log for actions run from the command line.

The actor is the operating system's user (``os:alice``): a command has no Django user.
The engine keeps no audit log of its own: it announces each operation with
``operation_performed``, and the dashboard (whose audit log it is) records it. Without
the dashboard nobody listens; the commands say so and go on.
"""

from __future__ import annotations

import getpass
import os
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


def actor() -> str:
    """The OS user running this command, as the audit log names it."""
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
