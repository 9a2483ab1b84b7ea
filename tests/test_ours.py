"""``steady_queue.ours`` tells Steady Queue's backends from the others of ``TASKS``, without
the modules that ask importing ``steady_queue.backend``."""

from __future__ import annotations

import subprocess
import sys

from django.utils.module_loading import import_string

from steady_queue import ours
from steady_queue.backend import SteadyQueueBackend
from steady_queue.compat import task_backends
from tests.acceptance.api import BACKPORT

DUMMY = import_string(
    f"{'django_tasks' if BACKPORT else 'django.tasks'}.backends.dummy.DummyBackend"
)


class Subclassed(SteadyQueueBackend):
    """A project's own subclass is a Steady Queue backend too."""


def test_the_backends_of_tasks_and_their_subclasses_are_ours():
    assert ours.is_ours(task_backends["default"]) and ours.is_ours(task_backends["billing"])
    assert ours.is_ours(Subclassed("sub", {}))
    assert ours.is_our_class(SteadyQueueBackend) and ours.is_our_class(Subclassed)


def test_other_backends_and_other_things_are_not():
    assert not ours.is_ours(DUMMY("dummy", {}))
    assert not ours.is_our_class(DUMMY)
    for thing in (None, "steady_queue.backend.SteadyQueueBackend", object(), SteadyQueueBackend):
        assert not ours.is_ours(thing)
    assert not ours.is_our_class(task_backends["default"])  # an instance, not a class


def test_defining_the_backend_class_registers_it():
    # A fresh interpreter: nothing is ours until steady_queue.backend is imported.
    code = (
        "import django; from django.conf import settings; settings.configure(); django.setup()\n"
        "from steady_queue import ours\n"
        "before = ours._classes\n"
        "from steady_queue.backend import SteadyQueueBackend\n"
        "print(before == () and ours._classes == (SteadyQueueBackend,))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
