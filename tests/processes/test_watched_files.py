"""What ``--reload`` watches: the project's apps' Python files, not installed packages'."""

from __future__ import annotations

import site
import uuid
from pathlib import Path

import django.contrib.admin
import pytest
from django.test import override_settings
from django.utils.autoreload import StatReloader

import steady_queue
from steady_queue.processes import watched_files
from steady_queue.processes.watched_files import PYTHON_FILES, project_directories


@pytest.fixture
def project_app(tmp_path, monkeypatch, settings) -> Path:
    """An installed app of the project in ``tmp_path``, with files nothing imports."""
    name = f"watched_{uuid.uuid4().hex[:8]}"
    app = tmp_path / name
    (app / "migrations").mkdir(parents=True)
    for path in ("__init__.py", "tasks.py", "migrations/__init__.py"):
        (app / path).write_text("")
    for path in ("queue.sqlite3", "queue.sqlite3-wal", "supervisor.pid", "runs.log"):
        (app / path).write_text("noise")
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS, name]):
        yield app


def watched(directories: list[Path]) -> set[Path]:
    reloader = StatReloader()
    for directory in directories:
        reloader.watch_dir(directory, PYTHON_FILES)
    return set(reloader.watched_files())


def test_the_projects_apps_are_watched_and_installed_packages_are_not(project_app):
    directories = project_directories()

    assert project_app in directories
    assert Path(steady_queue.__file__).parent.resolve() in directories
    assert Path(django.contrib.admin.__file__).parent.resolve() not in directories


def test_only_the_python_files_of_the_projects_apps_are_watched(project_app):
    files = watched(project_directories())

    assert {project_app / "tasks.py", project_app / "migrations" / "__init__.py"} <= files
    assert not {path for path in files if path.is_relative_to(project_app)} - {
        project_app / "__init__.py",
        project_app / "tasks.py",
        project_app / "migrations" / "__init__.py",
    }


def test_an_app_directory_holding_a_virtualenv_is_not_globbed(project_app, monkeypatch):
    packages = project_app / ".venv" / "lib" / "site-packages"
    packages.mkdir(parents=True)
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(packages)])
    monkeypatch.setattr(watched_files.sysconfig, "get_path", lambda name: None)

    assert project_app not in project_directories()
