"""The retention rules (``steady_queue.retention_rules``), checked at start: each bad
rule is an error naming it, and pruning refuses to run until it is fixed."""

from __future__ import annotations

from django.core import checks

import steady_queue

from ..retention.rules import SUCCEEDED, Retention, problems, state_words

ERROR_ID = "steady_queue.E350"
PRESERVE_WARNING_ID = "steady_queue.W351"


def check_retention_rules(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """One error per bad rule; a warning for succeeded rules that can have nothing to keep."""
    found: list[checks.CheckMessage] = [
        checks.Error(f"steady_queue.retention_rules: {problem}", id=ERROR_ID)
        for problem in problems()
    ]
    rules = steady_queue.retention_rules
    kept = [
        rule
        for rule in (rules if isinstance(rules, list | tuple) else [])
        if isinstance(rule, Retention) and rule.job_state == state_words()[SUCCEEDED] and rule.keep
    ]
    if kept and not steady_queue.preserve_finished_jobs:
        found.append(
            checks.Warning(
                f"steady_queue.retention_rules keep succeeded jobs ({kept[0]!r}), but "
                "steady_queue.preserve_finished_jobs is False: a success is deleted at once.",
                hint="Set preserve_finished_jobs = True for the rules to keep them.",
                id=PRESERVE_WARNING_ID,
            )
        )
    return found
