"""Each layer imports only from the layers below it (ARCHITECTURE.md, "Layers").

An AST check of every import statement (module level or inside functions, absolute or
relative) in each package against the rules of ``RULES``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "steady_queue"
DASHBOARD = PACKAGE.parent / "steady_queue_dashboard"
ABOVE_STORAGE = ("processes", "backend", "perform", "results", "testing", "management")
# package (relative to the repository) -> the modules it must not import, as dotted paths.
RULES = {
    "steady_queue/models": [
        "steady_queue.storage",
        *(f"steady_queue.{name}" for name in ABOVE_STORAGE),
        "steady_queue_dashboard",
    ],
    "steady_queue/storage": [
        *(f"steady_queue.{name}" for name in ABOVE_STORAGE),
        "steady_queue_dashboard",
    ],
    "steady_queue/processes": ["steady_queue.management", "steady_queue_dashboard"],
    # Services beside the backend: they read and change state, they run no process.
    "steady_queue/health": ["steady_queue.processes", "steady_queue.management"],
    "steady_queue/ops": ["steady_queue.processes", "steady_queue.management"],
    "steady_queue/metrics": ["steady_queue.processes", "steady_queue.management"],
    "steady_queue": ["steady_queue_dashboard"],
    "steady_queue_dashboard": ["steady_queue.processes", "steady_queue.storage"],
}
FORBIDDEN = tuple(RULES["steady_queue/models"])


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """Each module ``path`` (in package ``root``) imports, as a dotted path, by line."""
    package = [root.name, *path.relative_to(root).parent.parts]
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


def upward_imports(path: Path, root: Path = PACKAGE, forbidden=FORBIDDEN) -> list[str]:
    return [
        f"{path.relative_to(root.parent)}:{line} imports {module}"
        for line, module in imported_modules(path, root)
        for name in forbidden
        if module == name or module.startswith(f"{name}.")
    ]


def rules_for(path: Path) -> list[str]:
    """Every rule of a package that contains ``path`` (the engine's rule covers all)."""
    relative = path.relative_to(PACKAGE.parent).as_posix()
    return [
        name
        for package, names in RULES.items()
        if relative.startswith(f"{package}/")
        for name in names
    ]


SOURCES = sorted([*PACKAGE.rglob("*.py"), *DASHBOARD.rglob("*.py")])


@pytest.mark.parametrize(
    "path", SOURCES, ids=lambda path: path.relative_to(PACKAGE.parent).as_posix()
)
def test_each_module_imports_only_downward(path):
    root = PACKAGE if path.is_relative_to(PACKAGE) else DASHBOARD
    assert upward_imports(path, root, rules_for(path)) == []


def test_every_package_of_the_engine_has_a_rule():
    packages = {
        p.parent.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.glob("*/__init__.py")
    }
    layered = {package for package in RULES if package.count("/") == 1}
    # Entry points and data: commands sit on top; migrations are Django's.
    unlayered = {"steady_queue/management", "steady_queue/migrations", "steady_queue/checks"}
    assert packages - layered - unlayered == set(), (
        "add the new package to RULES and ARCHITECTURE.md"
    )


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
    (models / "fine.py").write_text("from .. import arguments, db\nfrom .job import Job\n")
    assert upward_imports(models / "fine.py", tmp_path / "steady_queue") == []


def test_the_storage_may_use_the_models_but_not_the_processes(tmp_path):
    storage = tmp_path / "steady_queue" / "storage"
    storage.mkdir(parents=True)
    (storage / "fine.py").write_text("from ..models import Job\n")
    (storage / "bad.py").write_text("from ..processes.worker import Worker\n")
    forbidden = RULES["steady_queue/storage"]
    assert upward_imports(storage / "fine.py", tmp_path / "steady_queue", forbidden) == []
    assert upward_imports(storage / "bad.py", tmp_path / "steady_queue", forbidden) != []


def test_a_model_importing_the_storage_is_caught(tmp_path):
    models = tmp_path / "steady_queue" / "models"
    models.mkdir(parents=True)
    (models / "bad.py").write_text("def f():\n    from .. import storage\n")
    assert upward_imports(models / "bad.py", tmp_path / "steady_queue") != []
