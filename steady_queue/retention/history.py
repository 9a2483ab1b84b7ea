"""The finished history's maintenance: day partitions created ahead, succeeded jobs moved
in, whole days dropped once retention no longer keeps them.

With ``steady_queue.partition_finished_by = "day"`` on PostgreSQL, the pruning pass
(``pruning.Pruning``: a dispatcher's poll, or ``manage.py steady_queue_prune``) also:

- creates the partitions of today and the next ``AHEAD`` days (and, before a batch moves
  in, that of any older day the batch needs), each ``CREATE TABLE ... PARTITION OF``
  its own short transaction, skipped when the partition exists (after the rules' own
  deletes, so a failing CREATE never holds them up);
- moves the succeeded jobs of the default succeeded rule (no task or queue rule of their
  own, not archived) that finished more than ``steady_queue.history_after`` ago, a batch
  per transaction: locked with SKIP LOCKED, copied to ``FinishedHistory`` and deleted
  with their related rows as pruning deletes them (``delete_jobs``);
- drops each partition whose whole day ended longer ago than that rule keeps: one
  ``DROP TABLE`` instead of a delete per row (waiting ``LOCK_TIMEOUT`` at most for the
  parent's lock; a partition it could not drop is dropped on the next pass).

Jobs of a more specific rule stay in the jobs table and are deleted in batches, as are
those older than the rule keeps when the setting is turned on (the default rule's own
target runs first). MariaDB and SQLite ignore the setting (``checks.retention`` warns).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta

from django.db import DatabaseError
from django.db.models import QuerySet

import steady_queue

from .. import db
from ..models import FinishedHistory, Job, states
from ..models import prune_tally as kinds
from ..models.finished_history import TABLE
from ..models.job.clearable import delete_jobs
from .rules import Retention, duration_in_words

#: The one layout there is: a partition per UTC day.
DAY = "day"
#: Partitions created ahead of today, so that a move never waits on a CREATE.
AHEAD = 2
#: How long a DROP waits for the parent's lock (readers of history hold it briefly).
LOCK_TIMEOUT = "2s"


def configured() -> bool:
    """Whether the setting asks for the partitioned history (any database)."""
    return steady_queue.partition_finished_by == DAY


def enabled() -> bool:
    """Whether maintenance moves finished jobs to history: the setting, on PostgreSQL."""
    return configured() and db.is_postgresql()


def default_rule(rules: list[Retention]) -> Retention | None:
    """The rule whose jobs move: the default succeeded one, unless it archives."""
    for rule in rules:
        if rule.scope == (states.FINISHED, "default", None) and not rule.archive:
            return rule
    return None


def partition_name(day: date) -> str:
    return f"{TABLE}_p{day:%Y%m%d}"


def day_of(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def partitions() -> dict[date, str]:
    """The day partitions there are, by day: one catalog query."""
    with db.connection().cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [TABLE],
        )
        names = [name for (name,) in cursor.fetchall()]
    found = {}
    for name in names:
        try:
            found[datetime.strptime(name.removeprefix(f"{TABLE}_p"), "%Y%m%d").date()] = name
        except ValueError:
            continue  # a partition of the operator's own: not ours to drop
    return found


def ensure_partitions(days: Iterable[date], known: dict[date, str] | None = None) -> list[date]:
    """Create the partitions of ``days`` that do not exist; return the days created.

    Each CREATE is its own transaction (it takes the parent's lock: held for an instant).
    Two dispatchers creating the same one at once: the loser's error is ignored once the
    partition is there.
    """
    known = partitions() if known is None else known
    created = []
    for day in sorted(set(days) - known.keys()):
        start, end = day_start(day), day_start(day + timedelta(days=1))
        sql = (
            f'CREATE TABLE IF NOT EXISTS "{partition_name(day)}" PARTITION OF "{TABLE}" '
            f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
        )
        try:
            with db.atomic(), db.connection().cursor() as cursor:
                cursor.execute(sql)
        except DatabaseError:
            if day not in partitions():
                raise
            continue
        known[day] = partition_name(day)
        created.append(day)
    return created


def prepare(now: datetime, known: dict[date, str] | None = None) -> list[date]:
    """Create the partitions of today and the next ``AHEAD`` days if missing."""
    today = day_of(now)
    ahead = [today + timedelta(days=days) for days in range(AHEAD + 1)]
    return ensure_partitions(ahead, known)


def targets(rules: list[Retention], now: datetime, target_class, scope) -> Iterator:
    """The pruning pass's history targets: moving jobs in, then dropping old days.

    ``target_class`` and ``scope`` are ``pruning._Target`` and ``pruning._scope`` (passed
    in: pruning imports this module, not the other way round).
    """
    rule = default_rule(rules)
    if rule is None:
        return
    yield _move_target(rule, rules, now, target_class, scope)
    if rule.keep is not None:
        yield _drop_target(rule.keep, now, target_class)


# -- moving jobs in ----------------------------------------------------------------------


def _move_target(rule: Retention, rules: list[Retention], now: datetime, target_class, scope):
    after = steady_queue.history_after
    rows = Job.objects.filter(scope(rule, rules, ""), finished_at__lt=now - after)
    known: dict[date, str] = {}

    def candidates(size: int) -> list:
        # Outside the batch's transaction (a CREATE never waits inside one), and only
        # when the pass runs (a dry run counts ``eligible`` and creates nothing).
        if not known:
            known.update(partitions())
            prepare(now, known)
        found = list(rows.order_by("finished_at").values_list("pk", "finished_at")[:size])
        ensure_partitions({day_of(finished) for _, finished in found}, known)
        return [pk for pk, _ in found]

    return target_class(
        f"succeeded jobs moved to history after {duration_in_words(after)}",
        kinds.HISTORY_MOVES,
        candidates=candidates,
        remove=lambda ids: (_move(rows, ids), 0),
        eligible=lambda: rows,
    )


def _move(rows: QuerySet, ids: list) -> int:
    """Copy the jobs ``ids`` still eligible to history and delete them: in the caller's
    transaction, the rows a worker or an operator holds skipped.

    The copy is one ``INSERT ... SELECT``: the rows never travel to Python and back
    (that doubled a move's time in ``bench/history_prune.py``), and stored values,
    an encrypted job's ciphertext included, are copied as they are.
    """
    held = list(rows.filter(pk__in=ids).order_by("pk").locked().values_list("pk", flat=True))
    if held:
        connection = db.connection()
        quote = connection.ops.quote_name
        columns = [quote(column) for column in copied_columns()]
        marks = ", ".join(["%s"] * len(held))
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {quote(TABLE)} ({', '.join(columns)}, {quote('moved_at')}) "
                f"SELECT {', '.join(columns)}, now() FROM {quote(Job._meta.db_table)} "
                f"WHERE {quote(Job._meta.pk.column)} IN ({marks})",
                held,
            )
        delete_jobs(Job, held)
    return len(held)


def copied_columns() -> list[str]:
    """The columns a history row takes from its job: all of ``FinishedHistory``'s but
    ``moved_at``, each named as in the jobs table (the model is the one list of them)."""
    return [
        field.column for field in FinishedHistory._meta.concrete_fields if field.name != "moved_at"
    ]


# -- dropping old days -------------------------------------------------------------------


def _drop_target(keep: timedelta, now: datetime, target_class):
    boundary = now - keep

    def droppable() -> list[date]:
        # A day goes once all of it is older than the rule keeps (its end before the cutoff).
        return sorted(day for day in partitions() if day_start(day + timedelta(1)) <= boundary)

    def eligible() -> QuerySet:
        days = droppable()
        if not days:
            return FinishedHistory.objects.none()
        return FinishedHistory.objects.filter(finished_at__lt=day_start(days[-1] + timedelta(1)))

    return target_class(
        f"succeeded history kept {duration_in_words(keep)}, a day's partition at a time",
        kinds.HISTORY_PARTITIONS,
        candidates=lambda size: droppable()[:size],
        remove=lambda days: (_drop(days), 0),
        eligible=eligible,
    )


def _drop(days: list[date]) -> int:
    """Drop the partitions of ``days`` (in the caller's transaction); return how many.

    A DROP takes the parent's lock, which readers of history hold while they read: it waits
    ``LOCK_TIMEOUT`` at most, and a day it could not drop is left for the next pass.
    """
    dropped = 0
    with db.connection().cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        for day in days:
            try:
                with db.atomic():  # a savepoint: a timeout undoes this DROP only
                    cursor.execute(f'DROP TABLE IF EXISTS "{partition_name(day)}"')
            except DatabaseError:
                break
            dropped += 1
    return dropped
