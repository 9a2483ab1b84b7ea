"""Every ```python block of every how-to guide runs, in order, under the test settings.

The blocks of one page share one namespace: a real module, registered in
``sys.modules``, so that the tasks they declare are module-level functions whose import
path resolves (``steady_queue.testing.run_ready_jobs`` imports a job's task by its
path). A block preceded by ``<!-- skip-test -->`` is left out. The blocks state what
they show with plain ``assert`` statements, so a guide whose API drifted fails here.
"""

from __future__ import annotations

import sys
import types

import pytest

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


@pytest.mark.parametrize("page", how_to_pages(), ids=lambda page: page.stem)
def test_the_python_blocks_of_the_how_to_guide_run_in_order(page, page_module, transactional_db):
    runnable = [block for block in page_blocks(page, "python") if not block.skipped]
    assert runnable, f"{page.name} has no python block to run"
    for block in runnable:
        where = f"{page.relative_to(DOCS)}:{block.line}"
        code = compile(block.code, where, "exec")
        exec(code, page_module.__dict__)
