"""A task that masks one of its own parameters in the dashboard."""

from __future__ import annotations

from steady_queue.compat import task
from steady_queue_dashboard.masking import masked_arguments


@masked_arguments("card_number")
@task()
def charge(card_number, amount, note=""):
    return {"receipt": "r-1", "auth_token": "tok-RETURNED-SECRET", "amount": amount}
