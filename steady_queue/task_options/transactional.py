"""Transactional completion: ``@transactional`` above ``@task``.

    from steady_queue.durable import transactional

    @transactional                  # the task writes to "default", where its jobs live
    @task()
    def apply_credit(invoice_id): ...

    @transactional(using="ledger")  # it writes to "ledger": its backend's jobs must live there
    @task(backend="ledger_queue")
    def post_entry(entry_id): ...

The runner (``runner/transactional.py``) runs the task's body inside an atomic block on
the queue database and records its success in the same transaction: the body's writes
to that database and the job's completion commit together, or neither does. This
module is the declaration: its registry by task path, the checks made as it is
declared, and the run-time refusals the runner and ``steady_queue.durable`` ask for.

``using`` names the database the task writes to ("default" unless said, as for Django's
``transaction.atomic()``). One transaction cannot span two databases, so a task whose
backend keeps its jobs elsewhere is refused: at decoration for the backend it is
declared with, and in the run (the run fails with ``TransactionalTaskError``, nothing
written) when the queue database it runs from is another one (``task.using(backend=...)``,
a changed ``steady_queue.database``). Refused too: an ``async def`` task (its body would
run on an event loop, not on the thread and connection that hold the transaction), and
a body that calls ``steady_queue.durable.sleep`` or ``wait_for_signal`` (a run that
ends to resume later has no success to commit with its writes; the run time refuses
what the decoration's look at the body's names could not see).
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, overload

from asgiref.sync import iscoroutinefunction
from django.db import DEFAULT_DB_ALIAS

import steady_queue

from .. import ours
from ..compat import Task
from ..exceptions import TransactionalTaskError
from . import TaskOptions

#: The durable calls that end a run to resume it later: never inside a transactional body.
RESUMING_CALLS = ("sleep", "wait_for_signal")
#: Where they live: the public face, and the runner's module that defines them.
DURABLE_MODULES = ("steady_queue.durable", "steady_queue.runner.durable_calls")


@dataclasses.dataclass(frozen=True)
class Transactional:
    """The declaration: the database the task's writes go to (its jobs must live there)."""

    using: str = DEFAULT_DB_ALIAS


_registry: TaskOptions[Transactional] = TaskOptions()

# Set while a transactional task's body runs: what to do once its transaction has ended.
_body: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "steady_queue_transactional_body", default=None
)


@overload
def transactional(task: Task, /) -> Task: ...
@overload
def transactional(*, using: str = DEFAULT_DB_ALIAS) -> Callable[[Task], Task]: ...
def transactional(task: Task | None = None, /, *, using: str = DEFAULT_DB_ALIAS) -> Any:
    """Commit the task's writes to ``using`` and its success in one transaction (see above)."""
    if not isinstance(using, str) or not using:
        raise TypeError(f"@transactional(using=...) takes a database alias, not {using!r}.")
    declaration = Transactional(using)

    def decorate(task: Task) -> Task:
        check(task, declaration)
        _registry.register(task, declaration)
        return task

    return decorate if task is None else decorate(task)


def check(task: object, declaration: Transactional) -> None:
    """Refuse, before it is registered, a declaration whose guarantee could not hold."""
    if not isinstance(task, Task):
        raise TypeError("@transactional goes above @task(): it takes a Task, not a function.")
    where = f"@transactional task {task.module_path}"
    if iscoroutinefunction(task.func):
        raise TransactionalTaskError(
            f"{where} is an async def: its body would run on an event loop, not in the "
            "transaction of the thread that records its success. Make it a plain def."
        )
    if called := resuming_calls(task.func):
        raise TransactionalTaskError(
            f"{where} calls steady_queue.durable.{called}: a run that ends to resume later "
            "has no success to commit with its writes. Drop @transactional, or move the "
            "sleep or wait into another task."
        )
    backend = task.get_backend()
    if ours.is_ours(backend):
        check_database(task.module_path, declaration, backend.database or steady_queue.database)


def check_database(task_path: str, declaration: Transactional, queue_alias: str) -> None:
    """Refuse a run (or declaration) whose jobs live in another database than its writes."""
    if queue_alias != declaration.using:
        raise TransactionalTaskError(
            f"@transactional task {task_path} writes to database {declaration.using!r} but "
            f"its jobs live in {queue_alias!r}: one transaction cannot hold both. Keep the "
            f"task's jobs in {declaration.using!r} (its backend's OPTIONS['database']), or "
            "declare the database it writes to with @transactional(using=...)."
        )


def resuming_calls(func: Callable[..., Any]) -> str | None:
    """The name of a durable sleep or wait the function's code refers to, if any.

    What a look at the code can see: a global name bound to one of them, or an
    attribute of the ``steady_queue.durable`` module; nested functions and lambdas too.
    """
    namespace = getattr(func, "__globals__", {})
    for code in _codes(getattr(func, "__code__", None)):
        for name in code.co_names:
            value = namespace.get(name)
            if _is_resuming(value):
                return value.__name__
            is_durable = isinstance(value, types.ModuleType) and value.__name__ in DURABLE_MODULES
            used = [call for call in RESUMING_CALLS if call in code.co_names]
            if is_durable and used:
                return used[0]
    return None


def _is_resuming(value: object) -> bool:
    return getattr(value, "__module__", None) in DURABLE_MODULES and (
        getattr(value, "__name__", None) in RESUMING_CALLS
    )


def _codes(code: types.CodeType | None) -> Iterator[types.CodeType]:
    if code is None:
        return
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _codes(constant)


def declared(task_path: str) -> Transactional | None:
    """The declaration of the task at ``task_path``; None for a task not transactional."""
    return _registry.get(task_path)


@contextlib.contextmanager
def body() -> Iterator[list[Callable[[], None]]]:
    """Mark the current context as a transactional body's; yields what to run after it."""
    after: list[Callable[[], None]] = []
    token = _body.set(after)
    try:
        yield after
    finally:
        _body.reset(token)


def after_transaction(callback: Callable[[], None]) -> bool:
    """Run ``callback`` once the running transactional body's transaction has ended,
    committed or rolled back; False (nothing kept) outside such a body."""
    after = _body.get()
    if after is None:
        return False
    after.append(callback)
    return True


def refuse_inside(call: str) -> None:
    """Raise ``TransactionalTaskError`` if a transactional task's body calls ``call``."""
    if _body.get() is not None:
        raise TransactionalTaskError(
            f"steady_queue.durable.{call} cannot run inside a @transactional task: a run that "
            "ends to resume later has no success to commit with its writes."
        )
