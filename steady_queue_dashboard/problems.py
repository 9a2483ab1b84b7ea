"""What is wrong right now, worst first: the overview leads with this list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

import steady_queue
from steady_queue.health import problems as health
from steady_queue.health.horizon import OldTransaction
from steady_queue.models import states as job_states

from . import adapter, instances
from .adapter.overview import ProcessState
from .conf import setting
from .templatetags.steady_queue_dashboard import duration

DANGER, WARNING = "danger", "warning"


@dataclass(frozen=True)
class Problem:
    severity: str
    title: str
    detail: str = ""
    url: str = ""
    link: str = ""


def find_problems(
    queues: list[adapter.Queue],
    states: list[ProcessState],
    failures: tuple[int, int],
    recurring_enabled: Callable[[], bool],
    old_transactions: Sequence[OldTransaction] = (),
) -> list[Problem]:
    """Rank what needs the operator: nothing runs jobs, nothing schedules, slow, failing."""
    live = [state for state in states if state.alive]
    unheard = set(health.unserved([queue.name for queue in queues], live))
    unserved = _no_worker([q for q in queues if q.name in unheard], live)
    supervision = _supervision(states, live, recurring_enabled)
    # Nothing runs at all: say that first, it is the cause of everything else.
    found = supervision + unserved if not live else unserved + supervision
    # A queue no worker serves is behind for that reason: said once, above.
    served = [queue for queue in queues if queue.name not in unheard]
    found += _slow(served) + _failure_spike(*failures) + _stale(states)
    found += _horizon(old_transactions)
    return sorted(found, key=lambda problem: problem.severity != DANGER)


def _no_worker(unheard: list[adapter.Queue], live: list[ProcessState]) -> list[Problem]:
    """The queues no live worker polls (``health``'s no_worker): waiting jobs are a danger."""
    workers = [state for state in live if state.kind == "Worker"]
    waiting = [q for q in unheard if q.size and not q.is_paused]
    if waiting and not workers:
        found = [_nothing_runs(waiting)]
    else:
        found = [_unserved(queue, workers) for queue in waiting]
    idle = [q.name for q in unheard if q not in waiting]
    if idle and workers:
        found.append(
            Problem(
                WARNING,
                _("No worker listens to %(queues)s.") % {"queues": ", ".join(idle)},
                _("Jobs enqueued there will wait until a worker polls these queues."),
                instances.url("process-list"),
                _("Processes"),
            )
        )
    return found


def _nothing_runs(waiting: list[adapter.Queue]) -> Problem:
    total = sum(queue.size for queue in waiting)
    return Problem(
        DANGER,
        ngettext(
            "No live worker: %(count)s job is waiting in %(queues)s.",
            "No live worker: %(count)s jobs are waiting in %(queues)s.",
            total,
        )
        % {"count": total, "queues": ", ".join(f"{q.name} ({q.size})" for q in waiting)},
        _("Start manage.py steady_queue: no job runs until a worker does."),
        instances.url("job-list", job_states.READY),
        _("Ready jobs"),
    )


def _unserved(queue: adapter.Queue, workers: list[ProcessState]) -> Problem:
    return Problem(
        DANGER,
        ngettext(
            "No live worker takes jobs from queue %(queue)s: %(count)s job is waiting.",
            "No live worker takes jobs from queue %(queue)s: %(count)s jobs are waiting.",
            queue.size,
        )
        % {"queue": queue.name, "count": queue.size},
        _("Running workers listen to: %(queues)s.")
        % {"queues": ", ".join(sorted({q for w in workers for q in w.queues}))},
        instances.url("queue-detail", queue.name),
        _("Ready jobs"),
    )


def _supervision(
    states: list[ProcessState], live: list[ProcessState], recurring: Callable[[], bool]
) -> list[Problem]:
    processes = instances.url("process-list")
    if not live:
        title = (
            _("No Steady Queue process is alive: their heartbeats stopped.")
            if states
            else _("No Steady Queue process is running.")
        )
        hint = _("Start it with manage.py steady_queue. Jobs wait until it runs.")
        return [Problem(DANGER, title, hint, processes, _("Processes"))]
    kinds = {state.kind for state in live}
    found = []
    if "Supervisor" not in kinds:
        found.append(
            Problem(
                DANGER,
                _("No live supervisor: crashed workers are not replaced."),
                _("Its heartbeat stopped or it never started."),
                processes,
                _("Processes"),
            )
        )
    # Asked only when no scheduler runs: it costs a query.
    if "Scheduler" not in kinds and recurring():
        found.append(
            Problem(
                WARNING,
                _("No scheduler is running: recurring tasks do not run."),
                _("Start manage.py steady_queue without --skip-recurring."),
                instances.url("recurring-list"),
                _("Recurring tasks"),
            )
        )
    return found


def _slow(queues: list[adapter.Queue]) -> list[Problem]:
    threshold = setting("LATENCY_THRESHOLD")
    return [
        Problem(
            WARNING,
            _("Queue %(queue)s is behind: its oldest job has waited %(wait)s.")
            % {"queue": queue.name, "wait": duration(queue.latency)},
            _("Above the latency threshold of %(limit)s.") % {"limit": duration(threshold)},
            instances.url("queue-detail", queue.name),
            _("Ready jobs"),
        )
        for queue in queues
        if queue.latency and queue.latency > threshold and not queue.is_paused
    ]


def _failure_spike(recent: int, before: int) -> list[Problem]:
    window, baseline = setting("FAILURE_SPIKE_WINDOW"), setting("FAILURE_SPIKE_BASELINE")
    usual = before * (window / baseline)
    if (
        recent < setting("FAILURE_SPIKE_MINIMUM")
        or recent < setting("FAILURE_SPIKE_FACTOR") * usual
    ):
        return []
    minutes = round(window.total_seconds() / 60)
    return [
        Problem(
            DANGER,
            ngettext(
                "Failure spike: %(count)s job failed in the last %(minutes)s minutes.",
                "Failure spike: %(count)s jobs failed in the last %(minutes)s minutes.",
                recent,
            )
            % {"count": recent, "minutes": minutes},
            _usual_rate(usual, baseline),
            instances.url("error-groups"),
            _("Failures by error"),
        )
    ]


def _usual_rate(usual: float, baseline: timedelta) -> str:
    if not usual:  # "usually about 0" reads like a rounding slip
        minutes = round(baseline.total_seconds() / 60)
        return _("None failed in the %(minutes)s minutes before.") % {"minutes": minutes}
    shown = f"{usual:.1f}" if usual < 1 else round(usual)
    return _("Usually about %(usual)s in that time.") % {"usual": shown}


def _horizon(transactions: Sequence[OldTransaction]) -> list[Problem]:
    """PostgreSQL: an old open transaction keeps dead rows, and claims slow down."""
    if not transactions:
        return []
    threshold = steady_queue.long_transaction_threshold or timedelta(0)
    return [
        Problem(
            WARNING,
            _("A transaction older than %(age)s holds back cleanup.")
            % {"age": duration(threshold)},
            _(
                "Oldest: %(oldest)s. Dead rows pile up and claims slow down until it ends: "
                "end it (pg_terminate_backend) and set idle_in_transaction_session_timeout."
            )
            % {"oldest": "; ".join(str(transaction) for transaction in transactions)},
        )
    ]


def _stale(states: list[ProcessState]) -> list[Problem]:
    stale = [state for state in states if not state.alive]
    if not stale or len(stale) == len(states):
        return []
    return [
        Problem(
            WARNING,
            ngettext(
                "%(count)s process stopped sending heartbeats.",
                "%(count)s processes stopped sending heartbeats.",
                len(stale),
            )
            % {"count": len(stale)},
            ", ".join(f"{state.kind} {state.name}" for state in stale[:5]),
            instances.url("process-list"),
            _("Processes"),
        )
    ]
