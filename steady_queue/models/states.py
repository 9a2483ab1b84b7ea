"""Where a job can be: the one word for each state, and the registry of execution kinds.

The words below are the only spelling of each state in code, URLs, the command line,
metrics and docs. Each execution table declares its kind once, in its class statement
(``class BlockedExecution(Execution, state=states.BLOCKED, task_status=..., ...)``);
``Execution.__init_subclass__`` registers it here. Every list of states (the engine's
operations, ``steady_queue.ops``, the metrics, the dashboard's lists) derives from
``kinds()`` and ``all_states()``. The registry is sealed once the models are loaded
(``models/__init__``): a table declaring a word not in ``KIND_ORDER``, or a word of
``KIND_ORDER`` that no table declares, fails the import.

``ALIASES`` keeps the old spellings working as input (bookmarked dashboard URLs,
``--status`` in scripts); output always says the canonical word.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q

from ..compat import TaskResultStatus
from ..exceptions import CANCELLED_CLASS

if TYPE_CHECKING:
    from django.db.models import QuerySet

READY = "ready"
SCHEDULED = "scheduled"
RUNNING = "running"
BLOCKED = "blocked"
THROTTLED = "throttled"
PAUSED = "paused"  # a job of a paused task (steady_queue.pauses)
WAITING = "waiting"
FAILED = "failed"
# Job-level states, with no table of their own.
CANCELLED = "cancelled"  # a failed execution of the JobCancelled class
FINISHED = "finished"  # no execution row; finished_at set
DISCARDED = "discarded"  # a job object whose rows are gone

#: The execution kinds, in the order lists show them (each one table).
KIND_ORDER = (READY, SCHEDULED, RUNNING, BLOCKED, THROTTLED, PAUSED, WAITING, FAILED)
#: Old spellings accepted as input (the dashboard's URLs, ``steady_queue_jobs --status``).
ALIASES = {"pending": READY, "in-progress": RUNNING}


@dataclass(frozen=True, eq=False)
class State:
    """A state a job can be in: an execution kind (``model`` set) or a job-level one."""

    name: str
    task_status: TaskResultStatus
    # When a job entered the state: a field of its table (for a job-level state, a
    # lookup from Job). ``--older-than`` compares it.
    entered_at: str
    started: bool = False
    discardable: bool = False
    cancellable: bool = False
    retryable: bool = False
    model: type | None = None
    # Job-level states only: the table holding their jobs (None: no execution row).
    table_relation: str | None = None

    @property
    def slug(self) -> str:
        """Its part of the dashboard's URL (``/jobs/<slug>/``) and its ``--status`` value."""
        return self.name

    @property
    def relation(self) -> str | None:
        """Job's reverse one-to-one to the table holding these jobs (None: finished)."""
        if self.model is None:
            return self.table_relation
        return self.model._meta.get_field("job").remote_field.related_name

    @property
    def entered_lookup(self) -> str:
        """``entered_at`` as a lookup from Job."""
        if self.model is None:
            return self.entered_at
        return f"{self.relation}__{self.entered_at}"

    @property
    def row_condition(self) -> Q:
        """What sets these rows apart in their table: a cancelled job's failure is its own."""
        if self.name == CANCELLED:
            return Q(exception_class=CANCELLED_CLASS)
        if self.name == FAILED:
            return ~Q(exception_class=CANCELLED_CLASS)
        return Q()

    def job_condition(self) -> Q:
        """The jobs in this state, as a condition on Job."""
        if self.relation is None:
            return Q(finished_at__isnull=False)
        present = Q(**{f"{self.relation}__isnull": False})
        cancelled = Q(**{f"{self.relation}__exception_class": CANCELLED_CLASS})
        if self.name == CANCELLED:
            return present & cancelled
        return present & ~cancelled if self.name == FAILED else present

    def rows(self) -> QuerySet:
        """This state's execution rows (a kind, or cancelled), as a lazy queryset."""
        model = self.model or _registered[FAILED].model
        return model.objects.filter(self.row_condition)


_registered: dict[str, State] = {}
_sealed: list[tuple[State, ...]] = []


def register(model: type, **declared) -> State:
    """Record the kind ``model`` declares; an unknown or repeated word fails at once."""
    name = declared["name"]
    if name not in KIND_ORDER:
        raise ImproperlyConfigured(
            f"{model.__name__} declares state {name!r}, which states.KIND_ORDER does not list."
        )
    if name in _registered and _registered[name].model.__qualname__ != model.__qualname__:
        raise ImproperlyConfigured(
            f"{model.__name__} and {_registered[name].model.__name__} both declare {name!r}."
        )
    _registered[name] = State(model=model, **declared)
    _sealed.clear()
    return _registered[name]


def seal(registered: dict[str, State] | None = None) -> tuple[State, ...]:
    """Check that every word of KIND_ORDER has its table; return the kinds in order."""
    registered = _registered if registered is None else registered
    missing = [name for name in KIND_ORDER if name not in registered]
    if missing:
        raise ImproperlyConfigured(
            f"No execution table declares the state(s) {', '.join(missing)} of states.KIND_ORDER."
        )
    return tuple(registered[name] for name in KIND_ORDER)


def kinds() -> tuple[State, ...]:
    """The execution kinds, in order (one per table)."""
    if not _sealed:
        _sealed.append(seal())
    return _sealed[0]


def all_states() -> tuple[State, ...]:
    """Every state a list can show: the kinds, then cancelled and finished."""
    return (*kinds(), _CANCELLED, _FINISHED)


def get(word: str) -> State:
    """The state named ``word`` (or an old spelling of it); KeyError for no state."""
    name = canonical(word)
    for state in all_states():
        if state.name == name:
            return state
    raise KeyError(word)


def canonical(word: str) -> str:
    """The canonical word for ``word``: itself, or the state an old spelling means."""
    return ALIASES.get(word, word)


def of_model(model: type) -> State:
    """The kind of the execution table ``model``."""
    return next(kind for kind in kinds() if kind.model is model)


def relations() -> tuple[str, ...]:
    """Job's reverse one-to-one to each execution table (``select_related`` takes them)."""
    return tuple(kind.relation for kind in kinds())


def names_where(flag: str) -> tuple[str, ...]:
    """The kinds whose ``flag`` (started, discardable, cancellable, retryable) is set."""
    return tuple(kind.name for kind in kinds() if getattr(kind, flag))


def in_words(names) -> str:
    """``names`` as a sentence says them: "ready, scheduled or running"."""
    names = list(names)
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)


def words(accepting_aliases: bool = False) -> tuple[str, ...]:
    """The words of every state a list can show (and the old spellings, if asked)."""
    names = tuple(state.name for state in all_states())
    return names + tuple(ALIASES) if accepting_aliases else names


_CANCELLED = State(
    name=CANCELLED,
    task_status=TaskResultStatus.FAILED,
    entered_at="failed_execution__created_at",
    discardable=True,
    retryable=True,
    table_relation="failed_execution",
)
_FINISHED = State(name=FINISHED, task_status=TaskResultStatus.SUCCESSFUL, entered_at="finished_at")
