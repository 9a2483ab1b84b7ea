"""What ``manage.py steady_queue`` runs: ``settings.STEADY_QUEUE = Configuration.Options(...)``.

Everything is optional. Without a configuration (or with ``None`` for a list) the
supervisor runs one dispatcher and one worker with the defaults below; an empty list
runs none of that kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import timedelta

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

Seconds = float | int | timedelta

#: Threads of a worker with async slots that run its async jobs' steps off the event
#: loop (each holds a database connection; see ``processes.async_slots``).
ASYNC_HELPER_THREADS = 3


def seconds(value: Seconds) -> float:
    """Return ``value`` (a timedelta or a number of seconds) as float seconds."""
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


@dataclass(frozen=True, kw_only=True)
class Worker:
    """Workers claim ready jobs from ``queues`` (in order) and run them on ``threads`` threads.

    ``processes`` forks that many identical workers. ``queues`` takes exact names,
    ``"*"`` for all queues and prefixes ending in ``*`` (``"beta*"``).

    ``recycle_after_jobs`` (a number of jobs) and ``recycle_above_memory`` (MiB of
    resident memory) replace a worker process once it ran that many jobs, or grew past
    that size: it stops claiming, lets its running jobs finish and exits, and the
    supervisor starts a fresh one at once. None (the default): never.

    ``async_concurrency`` runs up to that many jobs of ``async def`` tasks at once on an
    event loop in the worker, beside its threads. None (the default): async tasks take
    a thread each, like the others.
    """

    queues: Sequence[str] = ("*",)
    threads: int = 3
    processes: int = 1
    polling_interval: Seconds = timedelta(seconds=0.1)
    recycle_after_jobs: int | None = None
    recycle_above_memory: int | None = None
    async_concurrency: int | None = None


@dataclass(frozen=True, kw_only=True)
class Dispatcher:
    """Dispatchers make due scheduled jobs ready, ``batch_size`` at a time.

    With ``concurrency_maintenance`` they also expire semaphores and release jobs
    blocked for too long, every ``concurrency_maintenance_interval``.
    """

    polling_interval: Seconds = timedelta(seconds=1)
    batch_size: int = 500
    concurrency_maintenance: bool = True
    concurrency_maintenance_interval: Seconds = timedelta(minutes=10)


@dataclass(frozen=True, kw_only=True)
class Options:
    """The processes the supervisor runs; ``None`` means one with the defaults."""

    dispatchers: Sequence[Dispatcher] | None = None
    workers: Sequence[Worker] | None = None

    @property
    def configured_dispatchers(self) -> list[Dispatcher]:
        return [Dispatcher()] if self.dispatchers is None else list(self.dispatchers)

    @property
    def configured_workers(self) -> list[Worker]:
        return [Worker()] if self.workers is None else list(self.workers)


class Configuration:
    """The configuration types, spelled as in Solid Queue: ``Configuration.Worker(...)``."""

    Options = Options
    Worker = Worker
    Dispatcher = Dispatcher


def load(path: str | None = None) -> Options:
    """Return the Options at the dotted ``path``, else ``settings.STEADY_QUEUE``, else defaults.

    Raise ImproperlyConfigured, listing every problem, when the configuration is invalid.
    """
    options = _import(path) if path else getattr(settings, "STEADY_QUEUE", None)
    if options is None:
        return Options()
    source = path or "settings.STEADY_QUEUE"
    errors = [m for m in problems(options, source) if m.level >= checks.ERROR]
    if errors:
        raise ImproperlyConfigured("\n".join(f"{m.msg} {m.hint or ''}".strip() for m in errors))
    return options


def check_configuration(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Report problems of ``settings.STEADY_QUEUE`` (``manage.py check``)."""
    options = getattr(settings, "STEADY_QUEUE", None)
    if options is None:
        # The defaults can be wrong too: three threads need a pool of five connections.
        defaults = Options(workers=[Worker()], dispatchers=[Dispatcher()])
        return problems(defaults, "The default Configuration.Options()")
    return problems(options, "settings.STEADY_QUEUE")


def problems(options: object, source: str) -> list[checks.CheckMessage]:
    """Return what is wrong with ``options``, named after ``source`` in the messages."""
    if not isinstance(options, Options):
        return [
            checks.Error(
                f"{source} must be a steady_queue.configuration.Configuration.Options, "
                f"not {type(options).__name__}.",
                hint="STEADY_QUEUE = Configuration.Options(workers=[...], dispatchers=[...])",
                id="steady_queue.E101",
            )
        ]
    found = []
    for attribute, kind in (("workers", Worker), ("dispatchers", Dispatcher)):
        found += _entries_problems(getattr(options, attribute), kind, f"{source}.{attribute}")
    return found


def _entries_problems(entries: object, kind: type, where: str) -> list[checks.CheckMessage]:
    if entries is None:
        return []
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
        return [_error(f"{where} must be a list of Configuration.{kind.__name__}.", "E102")]
    found = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, kind):
            found.append(
                _error(
                    f"{where}[{index}] must be a Configuration.{kind.__name__}, "
                    f"not {type(entry).__name__}.",
                    "E102",
                )
            )
        else:
            found += _entry_problems(entry, f"{where}[{index}]")
    return found


def _entry_problems(entry: Worker | Dispatcher, where: str) -> list[checks.CheckMessage]:
    found = []
    for field in fields(entry):
        value = getattr(entry, field.name)
        found += _value_problems(field.name, value, f"{where}.{field.name}")
    if isinstance(entry, Worker) and not found:
        found += _pool_problems(entry, where)
    return found


COUNTS = (
    "threads",
    "processes",
    "batch_size",
    "recycle_after_jobs",
    "recycle_above_memory",
    "async_concurrency",
)
OPTIONAL_COUNTS = ("recycle_after_jobs", "recycle_above_memory", "async_concurrency")


def _value_problems(name: str, value: object, where: str) -> list[checks.CheckMessage]:
    if name == "queues":
        return _queues_problems(value, where)
    if name == "concurrency_maintenance":
        ok = isinstance(value, bool)
        return [] if ok else [_error(f"{where} must be True or False, not {value!r}.", "E103")]
    if name in OPTIONAL_COUNTS and value is None:
        return []
    if name in COUNTS:
        if isinstance(value, bool) or not isinstance(value, int):
            return [_error(f"{where} must be an integer, not {value!r}.", "E103")]
        return [] if value > 0 else [_error(f"{where} must be at least 1, not {value}.", "E104")]
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        return [_error(f"{where} must be a timedelta or seconds, not {value!r}.", "E103")]
    if seconds(value) <= 0:
        return [_error(f"{where} must be positive, not {value!r}.", "E104")]
    return []


def _queues_problems(queues: object, where: str) -> list[checks.CheckMessage]:
    if isinstance(queues, str | bytes) or not isinstance(queues, Sequence) or not queues:
        return [
            _error(
                f"{where} must be a non-empty list of queue names, not {queues!r}.",
                "E103",
                hint='For example queues=["real_time", "default"] or queues=["*"].',
            )
        ]
    found = []
    for queue in queues:
        if not isinstance(queue, str) or not queue.strip():
            found.append(_error(f"{where} has an invalid queue name: {queue!r}.", "E103"))
        elif "*" in queue.removesuffix("*"):
            found.append(
                _error(
                    f"{where} has a misplaced wildcard: {queue!r}.",
                    "E105",
                    hint='"*" is allowed alone or at the end of a prefix, as in "beta*".',
                )
            )
    return found or _unknown_queues(queues, where)


def _unknown_queues(queues: Sequence[str], where: str) -> list[checks.CheckMessage]:
    allowed = _allowed_queues()
    if allowed is None:
        return []
    unknown = [q for q in queues if "*" not in q and q not in allowed]
    if not unknown:
        return []
    return [
        checks.Warning(
            f"{where} lists queues that no Steady Queue backend in TASKS accepts: "
            f"{', '.join(unknown)}.",
            hint="Add them to the backend's QUEUES, or fix their spelling.",
            id="steady_queue.W101",
        )
    ]


def _allowed_queues() -> set[str] | None:
    """Queue names the Steady Queue backends accept; None when one of them accepts any."""
    allowed: set[str] = set()
    for config in getattr(settings, "TASKS", {}).values():
        if config.get("BACKEND") != "steady_queue.backend.SteadyQueueBackend":
            continue
        if not config.get("QUEUES"):
            return None
        allowed.update(config["QUEUES"])
    return allowed or None


def _pool_problems(worker: Worker, where: str) -> list[checks.CheckMessage]:
    size = _pool_size()
    # An event loop's helper threads, and asgiref's thread for sync_to_async, connect too.
    extra = 2 + (ASYNC_HELPER_THREADS + 1 if worker.async_concurrency else 0)
    if size is None or worker.threads <= size - extra:
        return []
    return [
        _error(
            f"{where}.threads is {worker.threads} but the queue database's connection pool "
            f"holds at most {size} connections.",
            "E106",
            hint=(
                "Each worker thread keeps its own connection and the worker needs two more "
                "(polling and heartbeat), and four more with async_concurrency (its event "
                f"loop's helpers): use at most pool size minus {extra} threads, or a larger "
                'DATABASES[...]["OPTIONS"]["pool"]["max_size"].'
            ),
        )
    ]


def _pool_size() -> int | None:
    from . import db

    config = settings.DATABASES.get(db.alias(), {})
    pool = config.get("OPTIONS", {}).get("pool")
    if not pool:
        return None
    # psycopg_pool's defaults: min_size 4, max_size equal to min_size.
    options = pool if isinstance(pool, dict) else {}
    return options.get("max_size") or options.get("min_size", 4)


def _import(path: str) -> object:
    try:
        return import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(f"Cannot import the configuration {path!r}: {exc}") from exc


def _error(message: str, code: str, hint: str | None = None) -> checks.Error:
    return checks.Error(message, hint=hint, id=f"steady_queue.{code}")
