"""The Retention panel's figures: the configured rules beside what each removed lately.

The rules are the engine's ``effective_rules()``: ``steady_queue.retention_rules`` with each
state's default filled in (``succeeded`` after ``clear_finished_jobs_after``, the others
kept for ever). The pruning writes one ``PruneTally`` per rule and pass;
``PruneTally.summary`` adds them up per rule in one query. Rules are matched to their
tallies by the words ``Retention.describe()`` gives both; what was removed under a rule no
longer configured, or under a kind's own rule (batches, rollups...), is listed apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import steady_queue
from steady_queue.models import PruneTally
from steady_queue.models.prune_tally import JOBS
from steady_queue.retention import Retention, effective_rules, problems

#: How far back the panel adds up what each rule removed.
WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class RuleRow:
    """One rule and what it removed (and archived) in the last ``WINDOW``."""

    rule: str
    state: str = ""
    # False: a state's default, which applies because no rule of the setting replaces it.
    configured: bool = True
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
    # What ``manage.py check`` says of bad rules: shown instead of them (pruning waits).
    problems: list[str] = field(default_factory=list)

    @property
    def configured(self) -> bool:
        """Whether ``retention_rules`` gives any rule (else the rows are the defaults)."""
        return any(rule.configured for rule in self.rules)


def retention_panel() -> Panel:
    """Each configured rule with its totals, then the other tallies of the window."""
    totals = {(total.rule, total.kind): total for total in PruneTally.summary(WINDOW)}
    if found := problems():
        rules = []
    else:
        configured = list(steady_queue.retention_rules)
        rules = [_row(rule, rule in configured, totals) for rule in effective_rules()]
    others = [
        RuleRow(rule, kind=kind, removed=t.removed, archived=t.archived, last_run=t.last_ran_at)
        for (rule, kind), t in totals.items()
    ]
    return Panel(rules, others, found)


def _row(rule: Retention, configured: bool, totals: dict) -> RuleRow:
    """The rule's row; its tally is taken out of ``totals`` (what is left is listed apart)."""
    total = totals.pop((rule.describe(), JOBS), None)
    return RuleRow(
        rule.describe(),
        state=rule.state,
        configured=configured,
        keep=rule.keep,
        archive=rule.archive,
        removed=total.removed if total else 0,
        archived=total.archived if total else 0,
        last_run=total.last_ran_at if total else None,
    )
