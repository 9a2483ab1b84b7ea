"""The documentation site builds with warnings as errors, and its links all land."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .links import broken_links
from .pages import DOCS, REPO, blocks, how_to_pages, tutorial

HOW_TOS = {
    "one-at-a-time-per-account.md",
    "nightly-at-3am.md",
    "why-did-a-job-fail.md",
    "move-from-celery.md",
    "move-from-django-tasks-db.md",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built as `make docs` builds it (strict) into a directory of its own."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stderr}"
    return out


def test_the_site_builds_strict_and_every_internal_link_and_anchor_resolves(site):
    assert (site / "index.html").exists()
    assert (site / "tutorial" / "index.html").exists()
    assert broken_links(site) == []


def test_every_how_to_guide_is_built_and_listed_in_the_nav(site):
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    how_to_section = next(entry["How-to guides"] for entry in nav if "How-to guides" in entry)
    listed = {Path(next(iter(item.values()))).name for item in how_to_section}
    assert {page.name for page in how_to_pages()} >= HOW_TOS
    assert listed >= HOW_TOS
    for name in HOW_TOS:
        assert (site / "how-to" / name.removesuffix(".md") / "index.html").exists()


def test_the_link_check_reports_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">Here</h2><a href="#here">ok</a>')
    (tmp_path / "index.html").write_text(
        '<a href="a/#here">ok</a> <a href="/a/">ok</a> <a href="a/#nowhere">bad anchor</a>'
        '<a href="b/">bad page</a> <a href="/c/">bad page</a> <a href="https://x.org/#y">out</a>'
    )
    assert broken_links(tmp_path) == [
        "index.html: a/#nowhere: no element with id 'nowhere'",
        "index.html: b/: no such file",
        "index.html: /c/: no such file",
    ]


def test_skip_markers_and_languages_are_read_from_the_page(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Text\n\n```python\na = 1\n```\n\n<!-- skip-test -->\n\n```python\nimport celery\n```\n"
        "\n- item\n\n    ```console\n    make docs\n    ```\n"
    )
    found = blocks(page)
    assert [(block.language, block.skipped, block.line) for block in found] == [
        ("python", False, 3),
        ("python", True, 9),
        ("console", False, 15),
    ]
    assert found[2].code == "make docs\n"


def test_the_tutorial_and_these_guides_have_python_that_the_tests_run():
    for page in [tutorial(), *(DOCS / "how-to" / name for name in sorted(HOW_TOS))]:
        runnable = [block for block in blocks(page, "python") if not block.skipped]
        assert runnable, f"{page.relative_to(DOCS)} has no python block that the tests run"
