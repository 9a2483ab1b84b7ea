"""What ``--reload`` watches: what ``runserver`` watches, and the project's apps' Python files.

``runserver`` watches the modules its process imported (its URLconf's views among
them), and what ``autoreload_started`` receivers add (templates and translations, whose
changes Django handles without a reload). The watching process imports no task modules:
the workers do, and they run in other processes. So every ``*.py`` file under the
directory of each installed app that is the project's own (not an installed package)
is watched too, imported by anyone or not yet. Nothing else the queue writes (its SQLite
database, pidfile, liveness file, logs, what tasks write) starts a reload: only Python
files, and files a project's own ``autoreload_started`` receiver adds.
"""

from __future__ import annotations

import contextlib
import site
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from django.apps import apps
from django.utils import autoreload

PYTHON_FILES = "**/*.py"


def start_watching(reloader: autoreload.BaseReloader) -> Iterator[None]:
    """Set up ``reloader`` as ``runserver`` does, plus the project's apps; take a first look."""
    from django.urls import get_resolver

    with contextlib.suppress(Exception):  # as runserver: a broken URLconf is not ours to report
        get_resolver().urlconf_module  # noqa: B018 (imports its modules, to watch them)
    for directory in project_directories():
        reloader.watch_dir(directory, PYTHON_FILES)
    autoreload.autoreload_started.send(sender=reloader)
    ticker = reloader.tick()
    next(ticker)  # the files as they are now, which later looks compare with
    return ticker


def project_directories() -> list[Path]:
    """The directories of the installed apps that are the project's own."""
    installed = _installation_directories()
    directories = [Path(app.path).resolve() for app in apps.get_app_configs()]
    return [path for path in directories if not _overlaps(path, installed)]


def _installation_directories() -> set[Path]:
    paths = [sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")]
    paths += [*site.getsitepackages(), site.getusersitepackages()]
    return {Path(path).resolve() for path in paths if path}


def _overlaps(path: Path, installed: set[Path]) -> bool:
    # An app inside site-packages is an installed package; an app directory holding a
    # virtualenv would have a whole installation globbed every second.
    return any(path.is_relative_to(other) or other.is_relative_to(path) for other in installed)
