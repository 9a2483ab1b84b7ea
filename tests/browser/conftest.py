"""Drive the dashboard in a real headless Chromium against Django's live server.

Playwright's sync API runs an event loop in this thread, and Django refuses ORM
calls from a thread with a running loop; the tests touch the database only
between browser steps, so they allow it, for this module's tests only. The
browser (and its loop) lives per module for the same reason: a loop left
running would break the async tests that come after.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from playwright.sync_api import Browser, Page, sync_playwright

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="module", autouse=True)
def _allow_orm_beside_playwright_loop() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="module")
def browser(_allow_orm_beside_playwright_loop) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def open_dashboard(browser: Browser, live_server, transactional_db) -> Iterator[Callable]:
    """Log in as a superuser through the admin's login form; return a page factory."""
    User.objects.create_superuser("root", "root@example.com", "s3cret-pw")
    contexts = []

    def open_page(path: str = "/jobs/", color_scheme: str = "light") -> Page:
        context = browser.new_context(
            viewport={"width": 1280, "height": 860}, color_scheme=color_scheme
        )
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server.url}/admin/login/?next={path}")
        page.fill("#id_username", "root")
        page.fill("#id_password", "s3cret-pw")
        page.click("input[type=submit]")
        page.wait_for_url(f"**{path}")
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def worker(transactional_db, tmp_path: Path) -> Iterator[subprocess.Popen]:
    """Run the real ``manage.py steady_queue`` (workers and dispatcher) on the test database."""
    log = (tmp_path / "worker.log").open("w")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.processes.settings",
        "SQ_PROCESS_DB_NAME": str(connection.settings_dict["NAME"]),
    }
    command = [sys.executable, str(REPO / "tests" / "manage.py"), "steady_queue"]
    command += ["--skip-checks", "--skip-recurring", "--config", "tests.processes.configs.FAST"]
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    yield process
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    log.close()
    print((tmp_path / "worker.log").read_text(errors="replace"))


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where screenshots go: docs/screenshots when SQ_SCREENSHOTS names it, else a temp dir."""
    target = Path(os.environ.get("SQ_SCREENSHOTS") or tmp_path / "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    return target
