"""ARCHITECTURE.md says what is true: its claims checked against the code.

Each test reads the page or the source (no database): the files it names exist, every
top-level module of the engine has its row in the tests table, rows are locked only
through ``QueueQuerySet.locked()``, only the modules the page names name a database,
and the dashboard's views import no engine model.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "steady_queue"
DASHBOARD = ROOT / "steady_queue_dashboard"
PAGE = (ROOT / "ARCHITECTURE.md").read_text()
# Where a relative name on the page may live, in this order.
TESTS = ROOT / "tests"
BASES = [ROOT, ENGINE, DASHBOARD, ENGINE / "models", ENGINE / "storage", ENGINE / "processes"]
BASES += [TESTS, TESTS / "storage"]


def _sources(*roots: Path):
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def _named_paths() -> list[str]:
    """Every `code` span of the page that names a .py file or a folder with a slash."""
    spans = re.findall(r"`([^`\s]+)`", PAGE)
    named = [s for s in spans if re.fullmatch(r"[\w./<>-]+(\.py|/)", s) and "<" not in s]
    return sorted(set(named))


def _exists(name: str) -> bool:
    if any((base / name).exists() for base in BASES):
        return True
    # A module named by its file alone (`ledger.py`): somewhere in the two apps.
    return "/" not in name.rstrip("/") and any(p.name == name for p in _sources(ENGINE, DASHBOARD))


def test_the_page_names_some_files_and_folders():
    # The check below means nothing if the pattern stopped finding the names.
    assert len(_named_paths()) > 60


@pytest.mark.parametrize("name", _named_paths())
def test_every_file_the_page_names_exists(name):
    assert _exists(name), f"ARCHITECTURE.md names {name}, which is not in the repository"


def _top_level_rows() -> dict[str, list[str]]:
    table = PAGE.split("The top-level modules of `steady_queue/`", 1)[1].split("Shared pieces", 1)[
        0
    ]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            module = re.match(r"`([\w.]+)`", cells[0]).group(1)
            rows[module] = re.findall(r"`(tests/[^`]+)`", cells[1])
    return rows


def test_every_top_level_module_has_its_tests_named():
    rows = _top_level_rows()
    modules = {p.name for p in ENGINE.glob("*.py")}
    assert modules - rows.keys() == set(), "top-level modules without a row in ARCHITECTURE.md"
    assert rows.keys() - modules == set(), "rows for modules that are gone"
    for module, tests in rows.items():
        assert tests, module
        for test in tests:
            assert (ROOT / test).exists(), f"{module}: {test} does not exist"


def _calls(path: Path, attribute: str) -> list[int]:
    tree = ast.parse(path.read_text())
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == attribute
    ]


def test_rows_are_locked_only_through_locked():
    base = ENGINE / "models" / "base.py"
    found = {
        str(p.relative_to(ROOT)): lines
        for p in _sources(ENGINE, DASHBOARD)
        if (lines := _calls(p, "select_for_update")) and p != base
    }
    assert found == {}
    assert _calls(base, "select_for_update"), "QueueQuerySet.locked() is where rows are locked"


def test_a_database_is_named_only_where_the_page_says():
    # Vendor names compared in code (a docstring or comment naming one is fine).
    allowed = {"steady_queue/db.py", "steady_queue/checks/setup.py"}
    naming = re.compile(r"postgresql|mysql|sqlite|django\.db\.backends\.\w+")
    found = set()
    for path in _sources(ENGINE):
        relative = str(path.relative_to(ROOT))
        if relative.startswith("steady_queue/storage/") or relative == "steady_queue/_moved.py":
            continue
        code = [
            node
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute | ast.Constant)
        ]
        for node in code:
            if (isinstance(node, ast.Attribute) and node.attr == "vendor") or (
                isinstance(node, ast.Constant) and naming.fullmatch(str(node.value))
            ):
                found.add(relative)
    assert found <= allowed, sorted(found - allowed)
    assert found == allowed, "the page names these two: keep it true or change it"


def test_the_dashboards_views_import_no_engine_model():
    found = []
    for path in _sources(DASHBOARD / "views"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "steady_queue.models"
            ):
                names = {a.name for a in node.names}
                if node.module != "steady_queue.models" or names - {"states"}:
                    found.append(f"{path.name}:{node.lineno} {node.module} {sorted(names)}")
    assert found == []
