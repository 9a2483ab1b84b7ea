"""Every file of deploy/ has its guide: named in a docs/how-to/deploy-*.md page.

The pages' relative links lead to files that exist, and each python block carries the
``<!-- skip-test -->`` marker on the line before it (a docs test may run how-to blocks;
these show settings to copy, not code to run).
"""

from __future__ import annotations

import re

import pytest
import yaml

from .files import DEPLOY, ROOT, by_kind, keda_queries, unit

PAGES = sorted((ROOT / "docs" / "how-to").glob("deploy-*.md"))
FILES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in DEPLOY.rglob("*")
    if p.is_file() and "__pycache__" not in p.parts
)


def test_there_is_a_page_for_systemd_docker_and_kubernetes():
    names = [page.name for page in PAGES]
    assert names == ["deploy-docker.md", "deploy-kubernetes.md", "deploy-systemd.md"]


@pytest.mark.parametrize("name", FILES)
def test_each_deploy_file_is_named_in_a_guide(name):
    assert any(f"`{name}`" in page.read_text() for page in PAGES), f"no guide names {name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_lead_to_files_that_exist(page):
    links = re.findall(r"\]\((?!https?:|#)([^)#]+)", page.read_text())
    assert links
    for link in links:
        assert (page.parent / link).resolve().exists(), f"{page.name}: {link} does not exist"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_python_blocks_are_marked_to_be_skipped(page):
    lines = page.read_text().splitlines()
    for number, line in enumerate(lines):
        if line.strip().startswith("```python"):
            assert number and lines[number - 1].strip() == "<!-- skip-test -->", (
                f"{page.name}:{number + 1}: a python block without <!-- skip-test --> before it"
            )


def blocks(page: str, language: str) -> list[str]:
    text = (ROOT / "docs" / "how-to" / page).read_text()
    found = [b.rstrip("\n") for b in re.findall(rf"```{language}\n(.*?)```", text, re.S)]
    # A block that includes a deploy file whole (a snippet) is that file by construction.
    return [b for b in found if not b.startswith("--8<--")]


def test_the_kubernetes_guide_shows_the_queries_keda_runs_as_they_stand():
    assert blocks("deploy-kubernetes.md", "sql") == list(keda_queries().values())


def test_the_kubernetes_guide_shows_the_workers_liveness_probe_as_it_stands():
    (shown,) = [yaml.safe_load(b) for b in blocks("deploy-kubernetes.md", "yaml")]
    (worker,) = [d for d in by_kind("Deployment") if d["metadata"]["name"].endswith("worker")]
    (container,) = worker["spec"]["template"]["spec"]["containers"]
    assert shown == {"livenessProbe": container["livenessProbe"]}


def test_the_systemd_guide_names_the_settings_the_unit_has():
    service = unit(DEPLOY / "systemd" / "steady-queue.service")["Service"]
    text = (ROOT / "docs" / "how-to" / "deploy-systemd.md").read_text()
    for key in ("KillMode", "KillSignal", "TimeoutStopSec", "Restart", "RestartSec"):
        assert f"`{key}={service[key][-1]}`" in text, key
