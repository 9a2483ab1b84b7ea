"""Fair share's start tags: where a job that becomes ready stands in the claim order.

Start-time fair queuing, with no counter shared between writers. Within one queue and
one priority, workers claim by ``fair_order`` (``POLL_ORDER``). When jobs of a key
become ready, they are tagged from two figures read in one statement through the
indexes: ``V``, the smallest tag ready in their queue and priority (0 if none), and
``last``, the key's largest ready tag (none if the key has no ready job). With the
key's weight ``w``, the first new job starts at ``last + 1/w``, or, for a key with no
ready job, at ``V + (1 - HEAD_START)/w``; each next one ``1/w`` later. So a key with a
backlog holds one place per ``1/w`` of the order, and a key that arrives slots in
within one weighted round of the jobs ready now, never behind a backlog.

A key that arrives starts a whole step ``1/w`` after ``V``, less a hair (``HEAD_START``)
so that it still goes before the backlogs' own next step: its step from the job it
last ran is unknown (claimed rows are gone), and starting at ``V`` itself would let
keys that arrive again and again (a job enqueued as the last one starts) hold ``V``
still, starving every key behind it.

Tags are written where rows are made ready (``ReadyExecution.create_all_from_jobs``,
a resume, and the storages' fast enqueues, which put ``orders`` into their own
statements), only while this process has a ``@fair`` task (``fairness.in_use``) or the
jobs carry a key: otherwise the rows keep ``fair_order`` 0 (FIFO by job id) and
nothing more is read. Weights come from ``FairWeight`` (a task's override, then the
key's), then the task's ``@fair(weight=...)``; jobs without a key weigh 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from django.db.models import F
from django.utils import timezone

from .. import db
from ..task_options import fairness
from .fair_weight import ALL_TASKS, FairWeight

if TYPE_CHECKING:
    from .execution import ReadyExecution
    from .job import Job

#: The share of a step by which a key that arrives goes before the backlogs' next step.
HEAD_START = 2**-10
#: Groups read per statement (five parameters each).
GROUPS_PER_STATEMENT = 100
#: Keys whose weights are read per query.
KEYS_PER_QUERY = 500

Group = tuple[str, int, str]  # queue name, priority, fairness key


def in_use() -> bool:
    """Whether this process has a ``@fair`` task (``task_options.fairness.in_use``)."""
    return fairness.in_use()


def needed(jobs: Sequence[Job]) -> bool:
    """Whether ready rows made for ``jobs`` here must be tagged."""
    return fairness.in_use() or any(job.fairness_key for job in jobs)


def tag(rows: Sequence[ReadyExecution], jobs: Sequence[Job]) -> None:
    """Set ``fairness_key`` and ``fair_order`` of the unsaved ready ``rows`` of ``jobs``
    (the same order, the enqueue order within each key)."""
    for row, job, order in zip(rows, jobs, orders(jobs), strict=True):
        row.fairness_key, row.fair_order = job.fairness_key, order


def orders(jobs: Sequence[Job]) -> list[float]:
    """The start tag of the ready row each of ``jobs`` gets now (the same order; within a
    key, the enqueue order): two reads, the weights set and each group's bounds.

    The portable path (``tag``) and the storages' fast enqueues, which write the tags
    into their own statements, both take them from here.
    """
    groups: dict[Group, list[int]] = defaultdict(list)
    for index, job in enumerate(jobs):
        groups[(job.queue_name, job.priority, job.fairness_key)].append(index)
    weights = Weights.of((job.task_path, job.fairness_key) for job in jobs)
    bounds = read_bounds(list(groups))
    tags = [0.0] * len(jobs)
    for group, members in groups.items():
        low, last = bounds[group]
        order = None
        for index in members:
            step = 1 / weights[(jobs[index].task_path, group[2])]
            if order is None:
                order = last + step if last is not None else low + (1 - HEAD_START) * step
            else:
                order += step
            tags[index] = order
    return tags


def read_bounds(groups: list[Group]) -> dict[Group, tuple[float, float | None]]:
    """``(V, last)`` of each group: one statement per ``GROUPS_PER_STATEMENT`` groups."""
    bounds = {}
    for start in range(0, len(groups), GROUPS_PER_STATEMENT):
        chunk = groups[start : start + GROUPS_PER_STATEMENT]
        with db.connection().cursor() as cursor:
            cursor.execute(*_bounds_sql(chunk))
            for number, low, last in cursor.fetchall():
                bounds[chunk[number]] = (low or 0.0, last)
    return bounds


def _bounds_sql(groups: list[Group]) -> tuple[str, list]:
    from .execution import ReadyExecution

    qn = db.connection().ops.quote_name
    table, order = qn(ReadyExecution._meta.db_table), qn("fair_order")
    where = f"{qn('queue_name')} = %s AND {qn('priority')} = %s"
    parts, params = [], []
    for number, (queue, priority, key) in enumerate(groups):
        # V: the first entry of the poll index (queue, -priority, fair_order) in its order,
        # not MIN(), which MariaDB answers by reading every entry of the queue and priority
        # (no MIN/MAX shortcut past a descending key part): a whole backlog per enqueue.
        # The key's last tag: MAX over sq_ready_fair_key, one look-up everywhere.
        first = f"SELECT {order} FROM {table} WHERE {where} ORDER BY {qn('priority')} DESC, {order}"
        parts.append(
            f"SELECT {number}, ({first} LIMIT 1), "
            f"(SELECT MAX({order}) FROM {table} WHERE {where} AND {qn('fairness_key')} = %s)"
        )
        params += [queue, priority, queue, priority, key]
    return " UNION ALL ".join(parts), params


class Weights(dict):
    """The weight of each (task path, key): overrides read in one query, then ``@fair``."""

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> Weights:
        pairs = set(pairs)
        overrides = _overrides(pairs)
        weights = cls()
        for task_path, key in pairs:
            weights[(task_path, key)] = (
                overrides.get((task_path, key))
                or overrides.get((ALL_TASKS, key))
                or declared_weight(task_path, key)
            )
        return weights


def declared_weight(task_path: str, key: str) -> int:
    """The weight ``@fair`` gives ``key`` in ``task_path`` (1 for a task without it)."""
    declaration = fairness.fairness_for(task_path)
    return 1 if declaration is None else declaration.weight_for(task_path, key)


def effective_weight(task_path: str, key: str) -> int:
    """The weight jobs of ``key`` in ``task_path`` are tagged with now."""
    return Weights.of([(task_path, key)])[(task_path, key)]


def _overrides(pairs: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    keys = sorted({key for _, key in pairs})
    tasks = {task for task, _ in pairs} | {ALL_TASKS}
    found = {}
    # A bulk enqueue of many tenants: a query per KEYS_PER_QUERY keys (SQLite's limit).
    for start in range(0, len(keys), KEYS_PER_QUERY):
        chunk = keys[start : start + KEYS_PER_QUERY]
        rows = FairWeight.objects.filter(key__in=chunk, task_path__in=tasks)
        found.update(
            ((task, key), weight)
            for task, key, weight in rows.values_list("task_path", "key", "weight")
        )
    return found


def override_weight(key: str, task_path: str, weight: int | None) -> int:
    """Set (``weight``) or clear (None) the weight of ``key`` in ``task_path`` (``ALL_TASKS``:
    in every task), and space the key's ready jobs by it at once; return how many moved.

    One transaction. Each (queue, priority, task) of the key's ready jobs is moved in one
    UPDATE: a tag ``t`` becomes ``V + (t - V) * old / new``, so a backlog feels the new
    weight from its next claim on, in the place it has now.
    """
    with db.atomic():
        groups = _ready_groups(key, task_path or None)
        old = {task: effective_weight(task, key) for _, _, task in groups}
        rows = FairWeight.objects.filter(task_path=task_path, key=key)
        if weight is None:
            rows.delete()
        elif not rows.update(weight=weight, set_at=timezone.now()):
            FairWeight.objects.create(task_path=task_path, key=key, weight=weight)
        return _respace(key, groups, old)


def _respace(key: str, groups: list[tuple[str, int, str]], old_weights: dict[str, int]) -> int:
    from .execution import ReadyExecution

    moved = 0
    for queue, priority, task in groups:
        old, new = old_weights[task], effective_weight(task, key)
        if old == new:
            continue
        low = read_bounds([(queue, priority, key)])[(queue, priority, key)][0]
        rows = ReadyExecution.objects.filter(
            queue_name=queue, priority=priority, fairness_key=key, job__task_path=task
        )
        moved += rows.update(fair_order=low + (F("fair_order") - low) * (old / new))
    return moved


def _ready_groups(key: str, task_path: str | None) -> list[tuple[str, int, str]]:
    from .execution import ReadyExecution

    rows = ReadyExecution.objects.filter(fairness_key=key)
    if task_path is not None:
        rows = rows.filter(job__task_path=task_path)
    groups = rows.values_list("queue_name", "priority", "job__task_path").distinct().order_by()
    return list(groups)
