"""Whether a task backend is a Steady Queue backend, answered without importing ``backend``.

The router's and the recurring tasks' checks, the batches, the operations and others
only need to tell Steady Queue's backends from the rest of ``TASKS``. Importing
``steady_queue.backend`` for an ``isinstance`` would make each of them depend on the
backend, which depends on the models and the storage, which use some of them: an import
cycle across the layers. ``SteadyQueueBackend`` registers itself here instead, as its
class is defined: a backend object (or class) can exist only once its module has been
imported, so an empty registry rightly answers "not ours".
"""

from __future__ import annotations

_classes: tuple[type, ...] = ()


def register[T: type](cls: T) -> T:
    """Count ``cls`` (and its subclasses) as Steady Queue backends."""
    global _classes
    _classes = (*_classes, cls)
    return cls


def is_ours(backend: object) -> bool:
    """Whether ``backend`` (a task backend object) is a Steady Queue backend."""
    return isinstance(backend, _classes)


def is_our_class(cls: object) -> bool:
    """Whether ``cls`` (a signal's sender, an imported BACKEND) is a Steady Queue backend class."""
    return isinstance(cls, type) and issubclass(cls, _classes)
