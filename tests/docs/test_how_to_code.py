"""Every ```python block of every how-to guide runs, in order, under the test settings.

The blocks of one page share one namespace: a real module, registered in
``sys.modules``, so that the tasks they declare are module-level functions whose import
path resolves (``steady_queue.testing.run_ready_jobs`` imports a job's task by its
path). A block preceded by ``<!-- skip-test -->`` is left out. The blocks state what
they show with plain ``assert`` statements, so a guide whose API drifted fails here.

A block headed ``# settings.py`` (or ``# mysite/settings.py``) shows settings: its
upper-case names are applied with ``override_settings`` for the rest of the page, so
that ``TIME_ZONE = "Europe/Paris"`` is the zone the page's later blocks run in.

On Django 5.2 (no ``django.tasks``) the blocks import from the backport instead, as
the guides tell readers on 5.2 to do.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from contextlib import ExitStack

import pytest
from django.test import override_settings

from steady_queue.task_options import recurring_task

from .pages import DOCS, how_to_pages
from .pages import blocks as page_blocks


@pytest.fixture
def page_module(request):
    """A fresh module for one page's blocks; the recurring tasks it declares go with it."""
    name = f"tests.docs.page_{request.node.callspec.id.replace('-', '_')}"
    module = types.ModuleType(name)
    declared = list(recurring_task._declared)
    sys.modules[name] = module
    yield module
    del sys.modules[name]
    recurring_task._declared[:] = declared


_SETTINGS_HEADER = re.compile(r"^# ([\w-]+/)?settings\.py\b")
# Settings a test cannot swap under a running suite (the app registry, the databases,
# the task backends are built once): a block setting them is for the reader only.
FIXED_SETTINGS = {
    "INSTALLED_APPS",
    "MIDDLEWARE",
    "DATABASES",
    "DATABASE_ROUTERS",
    "TASKS",
    "ROOT_URLCONF",
}


def _runnable(page) -> list:
    return [block for block in page_blocks(page, "python") if not block.skipped]


@pytest.mark.parametrize(
    "page", [page for page in how_to_pages() if _runnable(page)], ids=lambda page: page.stem
)
def test_the_python_blocks_of_the_how_to_guide_run_in_order(page, page_module, transactional_db):
    runnable = _runnable(page)
    with ExitStack() as overrides:
        for block in runnable:
            source = _for_this_django(block.code)
            code = compile(source, f"{page.relative_to(DOCS)}:{block.line}", "exec")
            if _SETTINGS_HEADER.match(block.code):
                overrides.enter_context(override_settings(**_settings_of(code)))
            else:
                exec(code, page_module.__dict__)


def _for_this_django(source: str) -> str:
    if importlib.util.find_spec("django.tasks") is None:
        return source.replace("from django.tasks", "from django_tasks")
    return source


def _settings_of(code) -> dict:
    namespace: dict = {}
    exec(code, namespace)
    settings = {name: value for name, value in namespace.items() if name.isupper()}
    fixed = sorted(FIXED_SETTINGS & settings.keys())
    assert not fixed, (
        f"{code.co_filename} sets {', '.join(fixed)}, which a test cannot apply: "
        "mark the block <!-- skip-test -->"
    )
    return settings


def test_a_settings_block_that_sets_what_a_test_cannot_swap_asks_to_be_skipped():
    code = compile('INSTALLED_APPS = ["myapp"]\nTIME_ZONE = "UTC"\n', "page.md:3", "exec")
    with pytest.raises(AssertionError, match=r"page\.md:3 sets INSTALLED_APPS.*skip-test"):
        _settings_of(code)
    assert _settings_of(compile('TIME_ZONE = "Asia/Tokyo"\n', "page.md:9", "exec")) == {
        "TIME_ZONE": "Asia/Tokyo"
    }
