"""The dashboard's one access guard: active staff may look, the permission holders may act."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from steady_queue import db

from . import instances
from .conf import setting

MANAGE_PERMISSION = "steady_queue.manage_jobs"
# Changing what runs (a recurring schedule's cron, task, arguments), not only when.
EDIT_PERMISSION = "steady_queue_dashboard.edit_jobs"
# Reading an encrypted task's arguments, results, errors and log (each reveal audited).
REVEAL_PERMISSION = "steady_queue_dashboard.reveal_arguments"


def can_manage(user) -> bool:
    """Return whether ``user`` may run dashboard actions (superusers may)."""
    return user.is_active and user.is_staff and user.has_perm(MANAGE_PERMISSION)


def can_edit(user) -> bool:
    """Return whether ``user`` may create and edit recurring schedules (superusers may)."""
    return user.is_active and user.is_staff and user.has_perm(EDIT_PERMISSION)


def can_reveal(user) -> bool:
    """Return whether ``user`` may reveal encrypted jobs' data (superusers may)."""
    return user.is_active and user.is_staff and user.has_perm(REVEAL_PERMISSION)


def guard(
    view: Callable | None = None, *, action: bool = False, permission: str | None = None
) -> Callable:
    """Let active staff see ``view``; with ``action``, require POST and the permission.

    ``permission``: one more the user must hold for any method (a form's page too),
    served from the primary database like an action.
    Anonymous users go to the login page (a full-page redirect for htmx requests,
    so that a login form is never swapped into a fragment); others get 403.
    """

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            # After "Log out", the back button must not show what was on screen: no page,
            # fragment or action answer of the console is kept by the browser.
            response = _guarded(request, *args, **kwargs)
            add_never_cache_headers(response)
            return response

        def _guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            user = request.user
            if not user.is_authenticated:
                return _to_login(request)
            if not (user.is_active and user.is_staff):
                raise PermissionDenied
            if action and not can_manage(user):
                raise PermissionDenied
            if permission and not user.has_perm(permission):
                raise PermissionDenied
            with instances.serving(request) as served:
                if action or permission or request.method not in ("GET", "HEAD") or served.backend:
                    return view(request, *args, **kwargs)
                # Pages may read a replica; what an action changes is read on the primary.
                with db.using_alias(setting("READ_DATABASE")):
                    return view(request, *args, **kwargs)

        return require_POST(guarded) if action else guarded

    return decorate(view) if view is not None else decorate


def _to_login(request: HttpRequest) -> HttpResponse:
    htmx = getattr(request, "htmx", None)
    # Come back to the page, not to the fragment or the action that was refused.
    page = (htmx.current_url_abs_path if htmx else None) or request.POST.get("next")
    response = redirect_to_login(page or request.get_full_path())
    return HttpResponseClientRedirect(response.url) if htmx else response
