"""Follow the tutorial's blocks as a reader would, in a temporary directory.

- A ``console`` block is run line by line with bash, in the directory the reader would
  be in (``cd`` is followed). ``python manage.py runserver`` and ``python manage.py
  steady_queue`` are the commands the reader leaves running in another terminal: they
  are started in the background (the web server on a free port instead of 8000) and
  stopped, with their children, at the end.
- A ``python`` block starts with a comment naming the file it shows:
  ``# mysite/urls.py`` is the whole file, ``# mysite/settings.py (add at the end)`` is
  appended to it.
- The virtualenv lines (``python -m venv .venv``, ``source .venv/bin/activate``,
  ``pip install /path/to/steady-queue``) are run for real with ``fresh_virtualenv``: a
  new virtualenv, this checkout installed into it from the network's package index.
  Without it, the interpreter running the tests stands for that virtualenv (it has
  what the install brings), with this checkout first on ``PYTHONPATH``.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from .pages import REPO, Block

CHECKOUT = "/path/to/steady-queue"
VIRTUALENV_LINES = [
    "python -m venv .venv",
    "source .venv/bin/activate",
    f"pip install {CHECKOUT}",
]
LEFT_RUNNING = ("python manage.py runserver", "python manage.py steady_queue")
_FILE_HEADER = re.compile(r"^# (?P<path>[\w./-]+)(?P<append> \(add at the end\))?\n")


def wait_until[T](condition: Callable[[], T], *, timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
    return value


class TutorialRun:
    def __init__(self, root: Path, *, fresh_virtualenv: bool) -> None:
        self.cwd = root
        self.fresh_virtualenv = fresh_virtualenv
        self.port = _free_port()
        self.outputs: list[str] = []
        self.virtualenv_lines: list[str] = []
        self.servers: list[tuple[subprocess.Popen, Path]] = []
        self.env = _reader_environment(fresh_virtualenv)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def follow(self, block: Block) -> None:
        if block.language == "console":
            for line in block.code.splitlines():
                if line.strip():
                    self._command(line.strip())
        elif block.language == "python":
            self._write_file(block.code)
        else:
            raise AssertionError(f"line {block.line}: no way to follow a {block.language} block")

    def stop(self) -> None:
        for popen, _ in self.servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGTERM)
        for popen, _ in self.servers:
            try:
                popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(popen.pid, signal.SIGKILL)
                popen.wait(timeout=5)

    def server_output(self) -> str:
        return "\n".join(f"--- {log.name} ---\n{log.read_text()}" for _, log in self.servers)

    def _command(self, line: str) -> None:
        if line in VIRTUALENV_LINES:
            self.virtualenv_lines.append(line)
            if self.fresh_virtualenv:
                self._virtualenv(line)
        elif line.startswith("cd "):
            self.cwd = self.cwd / line.removeprefix("cd ")
        elif line in LEFT_RUNNING:
            self._start(line)
        else:
            self.outputs.append(self._run(line))

    def _run(self, line: str) -> str:
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"`{line}` failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def _virtualenv(self, line: str) -> None:
        if line.startswith("source "):
            venv = self.cwd / ".venv"
            self.env["VIRTUAL_ENV"] = str(venv)
            self.env["PATH"] = f"{venv / 'bin'}{os.pathsep}{self.env['PATH']}"
        else:
            # The venv module of the interpreter running the tests (3.12 or newer).
            self._run(line.replace(CHECKOUT, str(REPO)).replace("python ", f"{sys.executable} ", 1))

    def _start(self, line: str) -> None:
        if line.endswith("runserver"):
            line = f"{line} 127.0.0.1:{self.port}"
        log = self.cwd / f"{line.split()[-1].replace(':', '_')}.log"
        with log.open("w") as out:
            popen = subprocess.Popen(
                ["bash", "-c", f"exec {line}"],
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.servers.append((popen, log))
        if "runserver" in line:
            wait_until(self._serving, timeout=60, what=f"runserver on {self.url}")

    def _serving(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/admin/login/", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    def _write_file(self, code: str) -> None:
        header = _FILE_HEADER.match(code)
        assert header, f"a python block of the tutorial does not name its file: {code[:60]!r}"
        path = self.cwd / header["path"]
        if header["append"]:
            assert path.exists(), f"{header['path']} does not exist to be added to"
            path.write_text(path.read_text() + "\n\n" + code)
        else:
            path.write_text(code)


class Browser:
    """What the reader's browser does: log in through the admin's form, open pages."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def log_in(self, username: str, password: str, next_path: str) -> str:
        form = self.get(f"/admin/login/?next={next_path}")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert token, "the login page has no CSRF token"
        data = {
            "csrfmiddlewaretoken": token[1],
            "username": username,
            "password": password,
            "next": next_path,
        }
        return self._open(f"/admin/login/?next={next_path}", urllib.parse.urlencode(data).encode())

    def get(self, path: str) -> str:
        return self._open(path, None)

    def _open(self, path: str, data: bytes | None) -> str:
        with self.opener.open(f"{self.base_url}{path}", data, timeout=30) as response:
            assert response.status == 200, f"{path} answered {response.status}"
            return response.read().decode()


def _reader_environment(fresh_virtualenv: bool) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH", "VIRTUAL_ENV")
    }
    env["PYTHONUNBUFFERED"] = "1"
    if not fresh_virtualenv:
        # The interpreter running the tests stands for the tutorial's virtualenv.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
        env["PYTHONPATH"] = str(REPO)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
