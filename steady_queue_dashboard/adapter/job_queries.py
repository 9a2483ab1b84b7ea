"""Jobs by status, their counts, argument search, and what the activity charts plot."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import JSONField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.fields.json import KeyTransform
from django.utils.text import Truncator

from steady_queue import arguments, db
from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import FailedExecution, Job, RateLimitBucket, states

from .. import masking
from ..listings import LISTINGS, Listing

# Counting stops here: "100,000+" tells as much as an exact count of millions, and reading
# at most this many index entries keeps every count within milliseconds.
COUNT_CAP = 100_000
# Positional arguments a bare search value is compared with where JSON containment is missing.
SEARCHED_POSITIONS = 5


@dataclass(frozen=True)
class Tally:
    value: int
    capped: bool = False


def capped_count(queryset: QuerySet, cap: int | None = None) -> Tally:
    """Count up to ``cap`` (COUNT_CAP) rows; larger results say only that they are larger."""
    cap = COUNT_CAP if cap is None else cap
    value = queryset.order_by()[: cap + 1].count()
    return Tally(min(value, cap), capped=value > cap)


def jobs(listing: Listing) -> QuerySet:
    """Return the jobs of ``listing``'s status, with the rows its columns show."""
    queryset = Job.objects.all()
    if listing.execution:
        queryset = queryset.filter(listing.condition, **{f"{listing.execution}__isnull": False})
    else:
        queryset = queryset.filter(finished_at__isnull=False)
    if listing.execution == "throttled_execution":
        queryset = queryset.annotate(window_next_release_at=_window_next_release())
    related = listing.select_related
    return queryset.select_related(*related) if related else queryset


def _window_next_release() -> Subquery:
    # When a throttled job's window next has room: a primary key lookup per row shown.
    window = RateLimitBucket.objects.filter(key=OuterRef("throttled_execution__bucket_key"))
    return Subquery(window.values("next_release_at")[:1])


def failed_jobs_by_ids(ids: list[int]) -> QuerySet:
    """The jobs ``ids`` that are still failed (a bulk action's exact set)."""
    return Job.objects.filter(pk__in=ids, failed_execution__isnull=False)


def find_job(pk: int) -> Job | None:
    """Return the job with every execution, process, recurring run, unique lock, batch and
    workflow step loaded."""
    queryset = Job.objects.with_execution()
    related = queryset.select_related(
        "recurring_execution", "unique_lock", "batch", "workflow_run", "workflow_step"
    )
    return related.filter(pk=pk).first()


def status_counts() -> dict[str, Tally]:
    """Count the jobs of each status, up to COUNT_CAP."""
    # A kind's rows in its table (failed and not cancelled: at most COUNT_CAP index
    # entries plus the cancelled ones); finished jobs have none.
    return {
        state.name: capped_count(
            state.rows() if state.relation else Job.objects.filter(state.job_condition())
        )
        for state in states.all_states()
    }


def listing_for(job: Job) -> Listing | None:
    state = job.state
    if state == states.FAILED and job.failed_execution.exception_class == CANCELLED_CLASS:
        state = states.CANCELLED
    return LISTINGS.get(state)


def argument_query(name: str | None, value: Any) -> Q:
    """Match jobs called with ``value`` as a positional argument, or as keyword ``name``.

    Masked values are never searched: a masked keyword matches nothing, and a bare
    value skips the tasks that mask positional arguments.
    """
    if name and masking.is_masked_key(name):
        return Q(pk__in=[])
    candidates = [value, *([str(value)] if not isinstance(value, str) else [])]
    if name:
        # Key transforms, not a "arguments__kwargs__<name>" path: a keyword named like a
        # lookup (isnull, in, contains) must stay a key, not become a lookup.
        keyword = KeyTransform(name, KeyTransform("kwargs", "arguments"))
        matches = Q()
        for side in (keyword, KeyTransform("pk", keyword)):
            for v in candidates:
                matches |= Q(side.get_lookup("exact")(side, Value(v, output_field=JSONField())))
        return matches & _excluding(masking.tasks_masking_names(name))
    hidden = _excluding(masking.tasks_masking_positions())
    if db.connection().features.supports_json_field_contains:
        # One containment test per candidate matches any position.
        return hidden & _any_of(
            {"arguments__contains": {"args": [shape]}}
            for v in candidates
            for shape in (v, {"pk": v})
        )
    return hidden & _any_of(
        {f"arguments__args__{position}{suffix}": v}
        for position in range(SEARCHED_POSITIONS)
        for suffix in ("", "__pk")
        for v in candidates
    )


def _excluding(task_paths: list[str]) -> Q:
    return ~Q(task_path__in=task_paths) if task_paths else Q()


def _any_of(lookups) -> Q:
    query = Q()
    for lookup in lookups:
        query |= Q(**lookup)
    return query


def display_arguments(job: Job) -> str:
    """Return the job's arguments as indented JSON, as the task will receive them, masked
    (an encrypted task's: ``masking.ENCRYPTED``)."""
    return display_call(job.arguments, job.task_path)


def display_call(stored: dict | None, task_path: str) -> str:
    """Stored arguments of ``task_path`` as indented JSON, masked; sealed: ENCRYPTED (a
    live job's page and an archived one's)."""
    if masking.is_encrypted(stored):
        return masking.ENCRYPTED
    args, kwargs = masking.mask_call(*arguments.display(stored or {}), task_path)
    return json.dumps({"args": args, "kwargs": kwargs}, indent=2, default=str)


def arguments_preview(stored: dict, length: int = 120, task_path: str | None = None) -> str:
    """Return stored arguments on one line, masked, shortened to ``length`` characters."""
    if masking.is_encrypted(stored):
        return masking.ENCRYPTED
    args, kwargs = masking.mask_call(*arguments.display(stored or {}), task_path)
    parts = [_compact(value) for value in args]
    parts += [f"{name}={_compact(value)}" for name, value in kwargs.items()]
    return Truncator(", ".join(parts)).chars(length)


def _compact(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def display_value(value: Any) -> str:
    """Return a return value as indented JSON, its masked keys hidden (sealed: ENCRYPTED)."""
    if masking.is_encrypted(value):
        return masking.ENCRYPTED
    return json.dumps(masking.mask(value), indent=2, default=str)


def activity(starts: list[datetime], width: timedelta) -> dict[str, dict[datetime, int]]:
    """Return jobs finished and failed in each bucket [start, start + width), by start."""
    return {
        states.FINISHED: _per_bucket(Job, "finished_at", starts, width),
        # Cancelled jobs are no failures (an operator's decision): the series leaves them out.
        states.FAILED: _per_bucket(FailedExecution, "created_at", starts, width, CANCELLED_CLASS),
    }


def _per_bucket(
    model, field: str, starts: list[datetime], width: timedelta, not_class: str | None = None
) -> dict[datetime, int]:
    # One COUNT per bucket, joined with UNION ALL in one query: each reads a range of the
    # time column's index and nothing else. Grouping by a function of the time instead
    # costs a function call and a hash lookup per job (over a day, twice as slow); the
    # SQL is written here because building a 96-part union with the ORM takes longer
    # than running it.
    if not starts:
        return {}
    connection = db.connection()
    quote, adapt = connection.ops.quote_name, connection.ops.adapt_datetimefield_value
    column = quote(model._meta.get_field(field).column)
    count = (
        f"SELECT %s, COUNT(*) FROM {quote(model._meta.db_table)} "
        f"WHERE {column} >= %s AND {column} < %s"
    )
    if not_class is not None:
        count += f" AND {quote('exception_class')} <> %s"
    params = []
    for index, start in enumerate(starts):
        params += [index, adapt(start), adapt(start + width)]
        params += [not_class] if not_class is not None else []
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join([count] * len(starts)), params)
        return {starts[index]: total for index, total in cursor.fetchall() if total}
