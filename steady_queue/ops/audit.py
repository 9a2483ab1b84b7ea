"""Entries in the dashboard's audit log for actions run from the command line.

The actor is the operating system's user (``os:alice``): a command has no Django user.
Without the dashboard app there is no audit log; the commands say so and go on.
"""

from __future__ import annotations

import getpass
import os
from typing import Any

from django.apps import apps

DASHBOARD = "steady_queue_dashboard"


def available() -> bool:
    """Whether the dashboard, and so its audit log, is installed."""
    return apps.is_installed(DASHBOARD)


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
    link: str = "",
) -> bool:
    """Write an entry when the dashboard is installed; return whether one was written."""
    if not available():
        return False
    from steady_queue_dashboard.adapter import Outcome
    from steady_queue_dashboard.audit import record_as

    outcome = Outcome(succeeded, message, affected)
    record_as(actor(), action, target, outcome, link=link, details=details)
    return True


def dashboard_link(name: str, *args: str) -> str:
    """The dashboard page of what was acted on, or "" where its URLs are not mounted."""
    from django.urls import NoReverseMatch, reverse

    try:
        return reverse(f"{DASHBOARD}:{name}", args=args)
    except NoReverseMatch:
        return ""
