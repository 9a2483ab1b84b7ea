"""Durable tasks of tests/durable and the state machine: a task that follows a plan.

``scripted(plan)`` runs the plan's actions in order; each is a list:

- ``["step", name]``: ``step(context, name, fn)``, ``fn`` appending ``(job id, name)``
  to ``BODIES`` and returning ``"<name>-result"``;
- ``["sleep", seconds]``: ``sleep(context, timedelta(seconds=seconds))``;
- ``["wait", name, timeout_seconds_or_None, catch]``: ``wait_for_signal``; with
  ``catch``, a ``SignalTimeout`` is caught and ``"timed out"`` kept instead;
- ``["raise_once", key]``: raises ``RuntimeError`` the first time ``key`` is seen (per
  ``RAISED``), then goes on.

It returns what its steps and waits returned, in order.
"""

from __future__ import annotations

from datetime import timedelta

from steady_queue.compat import task
from steady_queue.durable import sleep, step, wait_for_signal
from steady_queue.exceptions import SignalTimeout
from steady_queue.task_options.concurrency import limits_concurrency
from steady_queue.task_options.uniqueness import unique

BODIES: list[tuple[int, str]] = []
RAISED: set[str] = set()


def follow(context, plan: list) -> list:
    job_id, out = int(context.task_result.id), []
    for action in plan:
        kind = action[0]
        if kind == "step":
            name = action[1]
            out.append(step(context, name, lambda name=name: _body(job_id, name)))
        elif kind == "sleep":
            sleep(context, timedelta(seconds=action[1]))
        elif kind == "wait":
            name, timeout, catch = action[1], action[2], action[3] if len(action) > 3 else False
            timeout = None if timeout is None else timedelta(seconds=timeout)
            try:
                out.append(wait_for_signal(context, name, timeout=timeout))
            except SignalTimeout:
                if not catch:
                    raise
                out.append("timed out")
        elif kind == "raise_once":
            if action[1] not in RAISED:
                RAISED.add(action[1])
                raise RuntimeError(f"planned failure {action[1]}")
        else:
            raise ValueError(f"unknown action {action!r}")
    return out


def _body(job_id: int, name: str) -> str:
    BODIES.append((job_id, name))
    return f"{name}-result"


@task(takes_context=True)
def scripted(context, plan: list) -> list:
    return follow(context, plan)


@limits_concurrency(key="durable", to=1)
@task(takes_context=True)
def limited(context, plan: list) -> list:
    return follow(context, plan)


@unique(key=lambda plan, key: key)
@task(takes_context=True)
def unique_scripted(context, plan: list, key: str) -> list:
    return follow(context, plan)


@task(takes_context=True)
def returns_unstorable(context) -> None:
    step(context, "bad", lambda: object())


@task(takes_context=True)
def twice(context) -> None:
    step(context, "same", lambda: 1)
    step(context, "same", lambda: 2)
