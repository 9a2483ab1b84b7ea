"""What pruning removed: one ``PruneTally`` row per rule (or kind of row) and pass.

Written by ``steady_queue.retention.pruning`` once a rule removed something (a pass that removes
nothing writes nothing), and pruned like the rest, after
``steady_queue.prune_tallies_kept``. ``PruneTally.summary()`` adds them up per rule
for a console's "what each rule removed in the last day".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import models
from django.db.models import Max, Sum
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .base import QueueModel

#: The kinds of rows a pass removes (``PruneTally.kind``).
JOBS = "jobs"
BATCHES = "batches"
WORKFLOW_RUNS = "workflow runs"
TASK_ROLLUPS = "task rollups"
RATE_LIMIT_WINDOWS = "rate limit windows"
UNIQUE_LOCKS = "unique locks"
ARCHIVED_JOBS = "archived jobs"
PRUNE_TALLIES = "prune tallies"
#: Succeeded jobs moved to the partitioned finished history, and its day partitions
#: dropped (steady_queue.retention.history).
HISTORY_MOVES = "jobs moved to history"
HISTORY_PARTITIONS = "history partitions"
KINDS = (
    JOBS,
    BATCHES,
    WORKFLOW_RUNS,
    TASK_ROLLUPS,
    RATE_LIMIT_WINDOWS,
    UNIQUE_LOCKS,
    ARCHIVED_JOBS,
    PRUNE_TALLIES,
    HISTORY_MOVES,
    HISTORY_PARTITIONS,
)


@dataclass(frozen=True)
class RuleTotal:
    """What one rule removed since a moment: ``summary()``'s rows."""

    rule: str
    kind: str
    removed: int
    archived: int
    last_ran_at: datetime


class PruneTally(QueueModel):
    """How many rows one rule removed (and archived) in one pass of the pruning."""

    ran_at = models.DateTimeField(_("ran at"), default=timezone.now)
    #: The rule, as ``Retention.describe()`` says it, or the kind's own rule
    #: ("finished batches after 7 days").
    rule = models.CharField(_("rule"), max_length=255)
    kind = models.CharField(_("kind"), max_length=32, default=JOBS)
    removed = models.PositiveBigIntegerField(_("removed"), default=0)
    #: Of ``removed``, how many went to the archive (ArchivedJob) first.
    archived = models.PositiveBigIntegerField(_("archived"), default=0)
    seconds = models.FloatField(_("seconds"), default=0.0)

    class Meta:
        db_table = "steady_queue_prune_tallies"
        verbose_name = _("prune tally")
        verbose_name_plural = _("prune tallies")
        indexes = [models.Index(fields=["ran_at"], name="sq_prune_tallies_ran_at")]

    def __str__(self) -> str:
        return f"{self.rule}: {self.removed} {self.kind} at {self.ran_at:%Y-%m-%d %H:%M}"

    @classmethod
    def summary(cls, since: datetime | timedelta = timedelta(days=1)) -> list[RuleTotal]:
        """What each rule removed since ``since`` (a moment, or that long ago), in one
        query: the rules that removed the most first."""
        if isinstance(since, timedelta):
            since = timezone.now() - since
        rows = (
            cls.objects.filter(ran_at__gte=since)
            .values("rule", "kind")
            .annotate(total=Sum("removed"), moved=Sum("archived"), last=Max("ran_at"))
            .order_by("-total", "rule")
        )
        return [
            RuleTotal(row["rule"], row["kind"], row["total"], row["moved"], row["last"])
            for row in rows
        ]
