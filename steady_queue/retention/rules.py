"""Retention rules: how long jobs that ended are kept, by state, queue and task.

::

    from steady_queue.retention import Retention

    steady_queue.retention_rules = [
        Retention(state="succeeded", keep=timedelta(days=1)),
        Retention(state="failed", keep=timedelta(days=30), archive=True),
        Retention(task="app.tasks.audit_export", state="succeeded", keep=timedelta(days=90)),
        Retention(queue="bulk", state="succeeded", keep=timedelta(hours=1)),
    ]

A rule names one end state: ``succeeded`` (the jobs the engine calls ``finished``;
``finished`` is accepted as the same word), ``failed`` or ``cancelled``. For each job,
the most specific rule of its state wins: its task's, else its queue's, else the
state's default. ``keep=None`` keeps those jobs for ever. Without a default rule of its
own, ``succeeded`` keeps ``steady_queue.clear_finished_jobs_after``; ``failed`` and
``cancelled`` are kept for ever. Rules are checked by ``manage.py check``
(``steady_queue.E350``); pruning refuses to run with a bad one. ``steady_queue.retention.pruning``
applies them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import steady_queue

#: What the issue and the docs call a finished job: a rule's word for ``states.FINISHED``.
SUCCEEDED = "succeeded"


def state_words() -> dict[str, str]:
    """The words a rule's ``state`` may be, and the state each means.

    The states are imported here, not at the top: settings.py imports this module
    before Django's app registry (which ``steady_queue.models`` needs) is ready.
    """
    from ..models import states

    return {
        SUCCEEDED: states.FINISHED,
        states.FINISHED: states.FINISHED,
        states.FAILED: states.FAILED,
        states.CANCELLED: states.CANCELLED,
    }


def pruned_states() -> tuple[str, ...]:
    """The states rules apply to, in the order pruning goes through them."""
    from ..models import states

    return (states.FINISHED, states.FAILED, states.CANCELLED)


@dataclass(frozen=True, kw_only=True)
class Retention:
    """Keep the jobs that ended in ``state`` for ``keep`` after they ended, then delete
    them (``archive=True``: move them to ``ArchivedJob`` first).

    ``task`` (a dotted path) or ``queue`` (a name) narrows the rule; a rule may not name
    both. Values are not checked here (settings load before apps): ``manage.py check``
    names each bad rule.
    """

    state: str
    keep: timedelta | None
    archive: bool = False
    task: str | None = None
    queue: str | None = None

    @property
    def job_state(self) -> str | None:
        """The state this rule prunes (``finished`` for "succeeded"); None if unknown."""
        return state_words().get(self.state) if isinstance(self.state, str) else None

    @property
    def scope(self) -> tuple[str | None, str, str | None]:
        """What the rule covers: (state, "task"/"queue"/"default", the task or queue)."""
        if self.task is not None:
            return self.job_state, "task", self.task
        if self.queue is not None:
            return self.job_state, "queue", self.queue
        return self.job_state, "default", None

    def describe(self) -> str:
        """The rule in words, as the prune tallies, the archive and the console name it."""
        state = SUCCEEDED if self.job_state == state_words()[SUCCEEDED] else str(self.state)
        where = (
            f" of task {self.task}"
            if self.task is not None
            else f" on queue {self.queue}"
            if self.queue is not None
            else ""
        )
        kept = "kept for ever" if self.keep is None else f"kept {duration_in_words(self.keep)}"
        then = ", then archived" if self.archive and self.keep is not None else ""
        return f"{state} jobs{where} {kept}{then}"[:255]


def default_rules() -> list[Retention]:
    """The rules that apply where ``retention_rules`` gives no default of a state."""
    from ..models import states

    return [
        Retention(state=SUCCEEDED, keep=steady_queue.clear_finished_jobs_after),
        Retention(state=states.FAILED, keep=None),
        Retention(state=states.CANCELLED, keep=None),
    ]


def effective_rules(rules: list[Retention] | None = None) -> list[Retention]:
    """``rules`` (default: ``steady_queue.retention_rules``) with each state's default
    filled in, in the order pruning applies them (state; task, queue, default)."""
    rules = list(steady_queue.retention_rules if rules is None else rules)
    given = {rule.scope for rule in rules}
    for default in default_rules():
        if default.scope not in given:
            rules.append(default)
    order = {"task": 0, "queue": 1, "default": 2}
    return sorted(
        rules,
        key=lambda rule: (pruned_states().index(rule.job_state), order[rule.scope[1]]),
    )


def problems(rules: object = None) -> list[str]:
    """What is wrong with ``rules`` (default: ``steady_queue.retention_rules``): one
    sentence per bad rule, naming it. Empty: the rules can be applied."""
    rules = steady_queue.retention_rules if rules is None else rules
    if not isinstance(rules, list | tuple):
        return [f"steady_queue.retention_rules is {rules!r}: a list of Retention rules."]
    found, seen = [], {}
    for position, rule in enumerate(rules):
        if not isinstance(rule, Retention):
            found.append(f"retention_rules[{position}] is {rule!r}, not a Retention rule.")
            continue
        found += [f"{rule!r}: {problem}" for problem in _problems_of(rule)]
        if rule.job_state is not None and rule.scope in seen:
            found.append(
                f"{rule!r}: the same scope as {seen[rule.scope]!r} (one rule per state and "
                "task, queue or default)."
            )
        seen.setdefault(rule.scope, rule)
    return found


def _problems_of(rule: Retention) -> list[str]:
    from ..models import states

    found = []
    if rule.job_state is None:
        if rule.state == states.DISCARDED:
            found.append(
                "discarded jobs have no rows to prune (a discard deletes them); "
                "name succeeded, failed or cancelled."
            )
        else:
            found.append(f"state {rule.state!r} is not one of succeeded, failed or cancelled.")
    if rule.keep is not None and not isinstance(rule.keep, timedelta):
        found.append(f"keep is {rule.keep!r}: a timedelta, or None to keep for ever.")
    elif rule.keep is not None and rule.keep < timedelta(0):
        found.append(f"keep is {rule.keep!r}: it may not be negative.")
    if not isinstance(rule.archive, bool):
        found.append(f"archive is {rule.archive!r}: True or False.")
    if rule.task is not None and rule.queue is not None:
        found.append("a rule names a task or a queue, not both.")
    for name in ("task", "queue"):
        value = getattr(rule, name)
        if value is not None and (not isinstance(value, str) or not value):
            found.append(f"{name} is {value!r}: a non-empty string.")
    if isinstance(rule.task, str) and rule.task and (problem := _task_problem(rule.task)):
        found.append(problem)
    return found


def _task_problem(path: str) -> str | None:
    """Why ``path`` names no task (None: it does, or it cannot be told from here)."""
    from django.utils.module_loading import import_string

    from ..compat import Task

    try:
        found = import_string(path)
    except ImportError:
        return f"task {path!r} cannot be imported."
    except Exception:  # a module that fails to import is reported by its own checks
        return None
    if not isinstance(found, Task):
        return f"task {path!r} is not a Task."
    return None


def duration_in_words(keep: timedelta) -> str:
    seconds = int(keep.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{keep.total_seconds():g} seconds"
