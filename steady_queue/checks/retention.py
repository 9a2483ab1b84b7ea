"""The retention rules (``steady_queue.retention_rules``), checked at start: each bad
rule is an error naming it, and pruning refuses to run until it is fixed."""

from __future__ import annotations

from django.core import checks

import steady_queue

from .. import db
from ..retention.rules import SUCCEEDED, Retention, problems, state_words

ERROR_ID = "steady_queue.E350"
PRESERVE_WARNING_ID = "steady_queue.W351"
HISTORY_ERROR_ID = "steady_queue.E352"
HISTORY_IGNORED_ID = "steady_queue.W353"


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
    return found + check_finished_history()


def check_finished_history() -> list[checks.CheckMessage]:
    """``partition_finished_by``: "day" or None; "day" is a warning off PostgreSQL, where
    nothing is partitioned and finished jobs keep their batch deletes."""
    from ..retention.history import DAY  # loads models: not when settings import checks

    value = steady_queue.partition_finished_by
    if value is None:
        return []
    if value != DAY:
        return [
            checks.Error(
                f'steady_queue.partition_finished_by is {value!r}: "{DAY}" or None.',
                id=HISTORY_ERROR_ID,
            )
        ]
    if not db.is_postgresql():
        name = db.connection().display_name
        return [
            checks.Warning(
                f'steady_queue.partition_finished_by = "{DAY}" is ignored on {name}: '
                "only PostgreSQL partitions the finished history.",
                hint="Finished jobs stay in the jobs table and are deleted in batches.",
                id=HISTORY_IGNORED_ID,
            )
        ]
    return []
