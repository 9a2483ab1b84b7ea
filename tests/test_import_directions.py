"""The model layer never imports upward: not the backend, the runner, results or processes.

An AST check of every import statement (module level or inside functions, absolute or
relative) in ``steady_queue/models/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "steady_queue"
FORBIDDEN = ("backend", "perform", "results", "processes")


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """Each module ``path`` (in package ``root``) imports, as ``steady_queue.x``, by line."""
    package = ["steady_queue", *path.relative_to(root).parent.parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            # ``from .. import perform`` imports a module too.
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
            found.append((node.lineno, module))
    return found


def upward_imports(path: Path, root: Path = PACKAGE) -> list[str]:
    return [
        f"{path.relative_to(root.parent)}:{line} imports {module}"
        for line, module in imported_modules(path, root)
        for name in FORBIDDEN
        if module == f"steady_queue.{name}" or module.startswith(f"steady_queue.{name}.")
    ]


@pytest.mark.parametrize(
    "path", sorted((PACKAGE / "models").glob("*.py")), ids=lambda path: path.name
)
def test_models_do_not_import_upward(path):
    assert upward_imports(path) == []


@pytest.mark.parametrize(
    "source",
    [
        "from ..processes.errors import ProcessPrunedError",
        "def f():\n    from ..backend import SteadyQueueBackend",
        "from .. import perform",
        "import steady_queue.results",
        "from steady_queue.processes import pool",
    ],
)
def test_the_check_sees_each_kind_of_upward_import(tmp_path, source):
    models = tmp_path / "steady_queue" / "models"
    models.mkdir(parents=True)
    (models / "bad.py").write_text(source + "\n")
    assert upward_imports(models / "bad.py", tmp_path / "steady_queue") != []


def test_the_check_allows_imports_within_and_beside_the_models(tmp_path):
    models = tmp_path / "steady_queue" / "models"
    models.mkdir(parents=True)
    (models / "fine.py").write_text("from .. import db, postgres\nfrom .job import Job\n")
    assert upward_imports(models / "fine.py", tmp_path / "steady_queue") == []
