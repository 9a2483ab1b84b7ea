"""Confirmation of destructive actions: a step the operator takes, not a flag a link can set.

The confirmation page signs what it showed (who, which action, on which jobs, how many)
into a token; the action runs only when that token comes back in a POST and still
describes the same thing. A crafted URL or form cannot make one, and a token for one
filter, job or count does not confirm another.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.core import signing
from django.http import HttpRequest

FIELD = "confirm"
SALT = "steady_queue_dashboard.confirmation"
# Long enough to read the page; short enough that an old tab does not confirm today's jobs.
MAX_AGE = timedelta(minutes=15)


def token(request: HttpRequest, **facts: Any) -> str:
    """Sign ``facts`` (what the confirmation page shows) for the current user."""
    return signing.dumps(_normal(request, facts), salt=SALT, compress=True)


def confirmed(request: HttpRequest, **facts: Any) -> bool:
    """Whether the POST carries a valid token, signed for exactly these ``facts``."""
    value = request.POST.get(FIELD)
    if not value:
        return False
    try:
        signed = signing.loads(value, salt=SALT, max_age=MAX_AGE)
    except (signing.BadSignature, ValueError, UnicodeError):
        return False
    return signed == _normal(request, facts)


def attempted(request: HttpRequest) -> bool:
    """Whether the POST carried a token at all (one that no longer matches, if refused)."""
    return bool(request.POST.get(FIELD))


def _normal(request: HttpRequest, facts: dict[str, Any]) -> Any:
    # Through JSON and back: tuples become lists, as they come out of a signed token.
    return json.loads(json.dumps({"user": request.user.pk, **facts}, default=str))
