"""The Retention panel's figures: the configured rules beside what each removed lately.

The engine's pruning writes one ``PruneTally`` per rule and pass; ``PruneTally.summary``
adds them up per rule in one query. Rules are matched to their tallies by the words
``Retention.describe()`` gives both; what was removed under a rule no longer configured,
or under a kind's own rule (batches, rollups...), is listed apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from steady_queue.models import PruneTally
from steady_queue.models.prune_tally import JOBS

#: How far back the panel adds up what each rule removed.
WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class RuleRow:
    """One rule and what it removed (and archived) in the last ``WINDOW``."""

    rule: str
    state: str = ""
    keep: timedelta | None = None
    archive: bool = False
    kind: str = JOBS
    removed: int = 0
    archived: int = 0
    last_run: datetime | None = None


@dataclass(frozen=True)
class Panel:
    rules: list[RuleRow]
    others: list[RuleRow]


def retention_panel() -> Panel:
    """Each configured rule with its totals, then the other tallies of the window."""
    import steady_queue

    totals = {(total.rule, total.kind): total for total in PruneTally.summary(WINDOW)}
    rules = [_configured(rule, totals) for rule in steady_queue.retention_rules]
    others = [
        RuleRow(rule, kind=kind, removed=t.removed, archived=t.archived, last_run=t.last_ran_at)
        for (rule, kind), t in totals.items()
    ]
    return Panel(rules, others)


def _configured(rule, totals: dict) -> RuleRow:
    """The rule's row; its tally is taken out of ``totals`` (what is left is listed apart)."""
    total = totals.pop((rule.describe(), JOBS), None)
    return RuleRow(
        rule.describe(),
        state=rule.state,
        keep=rule.keep,
        archive=rule.archive,
        removed=total.removed if total else 0,
        archived=total.archived if total else 0,
        last_run=total.last_ran_at if total else None,
    )
