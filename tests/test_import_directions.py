"""Each layer imports only from the layers below it (ARCHITECTURE.md, "Layers").

An AST check of every import statement (module level or inside functions, absolute or
relative) in each package against the rules of ``RULES``, of each top-level module of
the engine against the rule of its layer (``TOP_LEVEL``), and of the whole import graph
for cycles that cross a package boundary. An import under ``if TYPE_CHECKING:`` is for
annotations only (it loads nothing at run time): no check counts it.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "steady_queue"
DASHBOARD = PACKAGE.parent / "steady_queue_dashboard"
ABOVE_STORAGE = ("processes", "backend", "runner", "results", "testing", "management")
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
    # Running one claimed job: the models and the storage below, no process above.
    "steady_queue/runner": [
        "steady_queue.processes",
        "steady_queue.management",
        "steady_queue_dashboard",
    ],
    # Services beside the backend: they read and change state, they run no process.
    "steady_queue/health": ["steady_queue.processes", "steady_queue.management"],
    "steady_queue/ops": ["steady_queue.processes", "steady_queue.management"],
    "steady_queue/metrics": ["steady_queue.processes", "steady_queue.management"],
    "steady_queue/retention": ["steady_queue.processes", "steady_queue.management"],
    # The system checks: the backend's own check calls them.
    "steady_queue/checks": [
        "steady_queue.backend",
        "steady_queue.processes",
        "steady_queue.management",
    ],
    "steady_queue": ["steady_queue_dashboard"],
    # The queue inside the web server: an entry point like the commands, over processes.
    "steady_queue/embedded": ["steady_queue.management", "steady_queue_dashboard"],
    "steady_queue_dashboard": ["steady_queue.processes", "steady_queue.storage"],
}
FORBIDDEN = tuple(RULES["steady_queue/models"])

# Each top-level module of the engine (``steady_queue/<name>.py``) by layer.
TOP_LEVEL = {
    # Declarations, settings and helpers that everything above uses: they import only
    # each other (and Django). "Is this backend ours?" is ``ours``, not ``backend``.
    "foundation": {
        "__init__",
        "_moved",
        "arguments",
        "compat",
        "configuration",
        "db",
        "exceptions",
        "hooks",
        "labels",
        "ours",
        "preflight",
        "routers",
    },
    # The backend and the services beside it: models and storage below, no process.
    "services": {
        "backend",
        "batches",
        "cleanup",
        "context",
        "fairness",
        "recurring_task",
        "pauses",
        "results",
        "testing",
        "waiting",
        "workflows",
    },
    # The AppConfig: loads the receivers and checks of every layer.
    "entry": {"apps"},
}
SUBPACKAGES = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
# The foundation's packages: what the foundation's modules import besides each other.
FOUNDATION_PACKAGES = ("task_options", "observability")
TOP_LEVEL_RULES = {
    "foundation": [
        *(f"steady_queue.{name}" for name in SUBPACKAGES if name not in FOUNDATION_PACKAGES),
        *(f"steady_queue.{name}" for name in TOP_LEVEL["services"] | TOP_LEVEL["entry"]),
        "steady_queue_dashboard",
    ],
    "services": ["steady_queue.processes", "steady_queue.management", "steady_queue_dashboard"],
    "entry": ["steady_queue_dashboard"],
}
# The foundation's packages (per-task declarations; log fields and spans) follow the
# foundation's rule: nothing of the engine above the foundation, nor the dashboard.
for name in FOUNDATION_PACKAGES:
    RULES[f"steady_queue/{name}"] = TOP_LEVEL_RULES["foundation"]


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _import_statements(node: ast.AST):
    """Every import statement under ``node``, but those of ``if TYPE_CHECKING:`` blocks."""
    for child in ast.iter_child_nodes(node):
        if _is_type_checking(child):
            for other in child.orelse:
                yield from _import_statements_of(other)
            continue
        yield from _import_statements_of(child)


def _import_statements_of(node: ast.AST):
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _import_statements(node)


def imported_names(path: Path, root: Path) -> list[tuple[int, str, str]]:
    """Each import of ``path`` (in package ``root``): (line, module, name as a dotted path).

    ``from a import b`` is (line, "a", "a.b"): ``b`` may be a module of ``a`` or a name in
    it; ``import a.b`` is (line, "a.b", "a.b").
    """
    package = [root.name, *path.relative_to(root).parent.parts]
    found = []
    for node in _import_statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, alias.name) for alias in node.names]
        else:
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found += [(node.lineno, module, f"{module}.{alias.name}") for alias in node.names]
    return found


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """Each module ``path`` (in package ``root``) imports, as a dotted path, by line."""
    found = []
    for line, module, name in imported_names(path, root):
        # ``from ..runner import perform`` imports a module too.
        found += [(line, module)] if name == module else [(line, name), (line, module)]
    return found


def upward_imports(path: Path, root: Path = PACKAGE, forbidden=FORBIDDEN) -> list[str]:
    return [
        f"{path.relative_to(root.parent)}:{line} imports {module}"
        for line, module in imported_modules(path, root)
        for name in forbidden
        if module == name or module.startswith(f"{name}.")
    ]


def rules_for(path: Path) -> list[str]:
    """Every rule of a package that contains ``path`` (the engine's rule covers all), and
    of its layer for a top-level module of the engine."""
    relative = path.relative_to(PACKAGE.parent).as_posix()
    names = [
        name
        for package, names in RULES.items()
        if relative.startswith(f"{package}/")
        for name in names
    ]
    if path.parent == PACKAGE:
        names += TOP_LEVEL_RULES[layer_of(path.stem)]
    return names


def layer_of(stem: str) -> str:
    return next(layer for layer, stems in TOP_LEVEL.items() if stem in stems)


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
    unlayered = {"steady_queue/management", "steady_queue/migrations"}
    assert packages - layered - unlayered == set(), (
        "add the new package to RULES and ARCHITECTURE.md"
    )


def test_every_top_level_module_of_the_engine_has_a_layer():
    stems = {p.stem for p in PACKAGE.glob("*.py")}
    layered = set().union(*TOP_LEVEL.values())
    assert stems - layered == set(), "add the new module to TOP_LEVEL and ARCHITECTURE.md"
    assert layered - stems == set(), "remove the module that is gone from TOP_LEVEL"


# -- Cycles across packages --------------------------------------------------------------


def package_of(module: str, is_package: bool) -> str:
    """``steady_queue.models`` for a module in (or the ``__init__`` of) a subpackage,
    ``steady_queue`` for a top-level module; the same for the dashboard."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 3 or (len(parts) == 2 and is_package) else parts[0]


def import_graph(roots: list[Path]) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Which modules each module of ``roots`` imports (of those roots), and their packages."""
    paths: dict[str, Path] = {}
    for root in roots:
        for path in root.rglob("*.py"):
            if "migrations" in path.relative_to(root).parts:
                continue  # Django's, and importing no module of the apps
            parts = list(path.relative_to(root.parent).with_suffix("").parts)
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {module: set() for module in paths}
    for module, path in paths.items():
        root = next(root for root in roots if path.is_relative_to(root))
        for _, imported, name in imported_names(path, root):
            target = resolve(name if name in paths else imported)
            if target is not None and target != module:
                edges[module].add(target)
    packages = {m: package_of(m, p.name == "__init__.py") for m, p in paths.items()}
    return edges, packages


def cycles_across_packages(edges: dict[str, set[str]], packages: dict[str, str]) -> list[str]:
    """Each import that crosses a package and is imported back: the cycle it closes."""
    found = []
    for source in sorted(edges):
        for target in sorted(edges[source]):
            if packages[source] != packages[target]:
                back = _path(edges, target, source)
                if back is not None:
                    found.append(" -> ".join([source, *back]))
    return found


def _path(edges: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """The shortest import path from ``start`` to ``goal``, if there is one."""
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        if module == goal:
            path = [module]
            while (module := came_from[module]) is not None:
                path.append(module)
            return path[::-1]
        for target in sorted(edges[module]):
            if target not in came_from:
                came_from[target] = module
                queue.append(target)
    return None


def test_no_import_cycle_crosses_a_package():
    cycles = cycles_across_packages(*import_graph([PACKAGE, DASHBOARD]))
    assert cycles == [], "\n".join(cycles[:10])


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return tmp_path / "steady_queue"


def test_the_cycle_check_sees_a_function_level_import_closing_a_cycle(tmp_path):
    root = _tree(
        tmp_path,
        {
            "steady_queue/__init__.py": "",
            "steady_queue/log.py": "def ours():\n    from .backend import SteadyQueueBackend\n",
            "steady_queue/backend.py": "from .models import Job\n",
            "steady_queue/models/__init__.py": "from .job import Job\n",
            "steady_queue/models/job.py": "from ..log import job_fields\n",
        },
    )
    cycles = cycles_across_packages(*import_graph([root]))
    assert cycles == [
        "steady_queue.backend -> steady_queue.models -> steady_queue.models.job "
        "-> steady_queue.log -> steady_queue.backend",
        "steady_queue.models.job -> steady_queue.log -> steady_queue.backend "
        "-> steady_queue.models -> steady_queue.models.job",
    ]


def test_the_cycle_check_allows_cycles_within_a_package_and_annotations(tmp_path):
    root = _tree(
        tmp_path,
        {
            "steady_queue/__init__.py": "",
            "steady_queue/backend.py": "from .models import Job\nfrom . import batches\n",
            "steady_queue/batches.py": "def f():\n    from .backend import SteadyQueueBackend\n",
            "steady_queue/retries.py": "if TYPE_CHECKING:\n    from .models import Job\n",
            "steady_queue/models/__init__.py": "from .job import Job\n",
            "steady_queue/models/job.py": "from .. import retries\nfrom . import execution\n",
            "steady_queue/models/execution.py": "def f():\n    from .job import Job\n",
        },
    )
    assert cycles_across_packages(*import_graph([root])) == []


@pytest.mark.parametrize(
    "source",
    [
        "from ..processes.errors import ProcessPrunedError",
        "def f():\n    from ..backend import SteadyQueueBackend",
        "from ..runner import perform",
        "import steady_queue.results",
        "from steady_queue.processes import pool",
    ],
)
def test_the_check_sees_each_kind_of_upward_import(tmp_path, source):
    models = tmp_path / "steady_queue" / "models"
    models.mkdir(parents=True)
    (models / "bad.py").write_text(source + "\n")
    assert upward_imports(models / "bad.py", tmp_path / "steady_queue") != []


@pytest.mark.parametrize(
    "source",
    [
        "from .models import Job",
        "def f():\n    from .backend import SteadyQueueBackend",
        "from . import storage",
        "from .processes.errors import ProcessExitError",
        "import steady_queue.models.execution.claimed_finish",
        "from .runner.perform import perform",
    ],
)
def test_a_foundation_module_importing_upward_is_caught(tmp_path, source):
    root = tmp_path / "steady_queue"
    root.mkdir()
    (root / "log.py").write_text(source + "\n")
    forbidden = TOP_LEVEL_RULES["foundation"]
    assert upward_imports(root / "log.py", root, forbidden) != []


def test_a_foundation_module_may_import_the_foundation_and_annotate_with_models(tmp_path):
    root = tmp_path / "steady_queue"
    root.mkdir()
    (root / "retries.py").write_text(
        "import steady_queue\nfrom . import ours, timeouts\nfrom .exceptions import JobTimeout\n"
        "if TYPE_CHECKING:\n    from .models import Job\n"
    )
    forbidden = TOP_LEVEL_RULES["foundation"]
    assert upward_imports(root / "retries.py", root, forbidden) == []


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


@pytest.mark.parametrize("package", FOUNDATION_PACKAGES)
def test_the_foundation_packages_import_only_the_foundation(tmp_path, package):
    root = tmp_path / "steady_queue"
    (root / package).mkdir(parents=True)
    fine = root / package / "fine.py"
    fine.write_text("from . import TaskOptions\nfrom .. import db\nfrom ..compat import Task\n")
    fine.with_name("other.py").write_text("from ..observability import log\n")
    bad = root / package / "bad.py"
    bad.write_text("from ..models import Job\ndef f():\n    from ..runner.perform import perform\n")
    forbidden = RULES[f"steady_queue/{package}"]
    assert upward_imports(fine, root, forbidden) == []
    assert upward_imports(fine.with_name("other.py"), root, forbidden) == []
    found = upward_imports(bad, root, forbidden)
    assert any(":1 imports steady_queue.models" in line for line in found)
    assert any(":3 imports steady_queue.runner" in line for line in found)
