"""Start the demo as `make demo` does, check its pages and its mix of jobs, stop it with TERM.

Usage: .venv/bin/python scripts/demo_smoke.py
Uses a throw-away SQLite database and a free port. Logs in as the demo's staff user and
reads every dashboard screen, and checks that the seeded jobs give each screen something
to show (jobs behind a paused queue, blocked, scheduled, running with progress, failed
with several distinct errors, recurring tasks). Exits 1, saying what went wrong, if the
demo does not come up, a page answers unexpectedly, the mix is missing, or it does not
stop cleanly.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0

MIX_TIMEOUT = 90.0
# A card number of the demo's charge_card jobs, shown in full.
CARD_NUMBER = re.compile(r"\b4\d{15}\b")

EXPECTED = [
    ("/", 200, None),
    ("/static/demo/site.css", 200, None),
    ("/jobs/", 302, "/admin/login/?next=/jobs/"),
]
# Every dashboard screen, read as the demo's staff user; each must answer 200.
DASHBOARD_PAGES = [
    "/jobs/",
    "/jobs/ready/",
    "/jobs/scheduled/",
    "/jobs/running/",
    "/jobs/blocked/",
    "/jobs/throttled/",
    "/jobs/failed/",
    "/jobs/finished/",
    "/jobs/queues/",
    "/jobs/queues/reports/",
    "/jobs/processes/",
    "/jobs/recurring/",
    "/jobs/concurrency/",
    "/jobs/rate-limits/",
]
# What a new user must find to try every action: at least this many of each
# (names as demo.seeding.counts() gives them), all at the same moment.
MIX_MINIMUMS = {
    "ready in a paused queue": 1,
    "blocked": 1,
    "throttled": 1,
    "scheduled": 1,
    "in progress": 1,
    "running with progress": 1,
    "failed": 1,
    "distinct errors": 3,
    "finished": 1,
    "recurring tasks": 3,
}
USERNAME = PASSWORD = "admin"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def main() -> int:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        environment = {**os.environ, "DEMO_DATABASE": str(Path(tmp) / "demo.sqlite3")}
        demo = subprocess.Popen(
            [sys.executable, str(ROOT / "demo_site" / "run_demo.py"), "--port", str(port)],
            env=environment,
            stdin=subprocess.DEVNULL,
        )
        try:
            problems = check_pages(demo, port)
            if not problems:
                problems = check_mix(environment) + check_dashboard(port, environment)
        finally:
            problems += stop(demo)
    for problem in problems:
        print(f"demo_smoke: {problem}", file=sys.stderr)
    if not problems:
        print("demo_smoke: the demo came up, answered as expected and stopped cleanly.")
    return 1 if problems else 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_pages(demo: subprocess.Popen, port: int) -> list[str]:
    deadline = time.monotonic() + START_TIMEOUT
    while not answers(port):
        if demo.poll() is not None:
            return [f"the demo exited with status {demo.returncode} before serving pages"]
        if time.monotonic() > deadline:
            return [f"the demo did not answer on port {port} within {START_TIMEOUT:.0f}s"]
        time.sleep(0.5)
    return [problem for path, *expected in EXPECTED if (problem := check(port, path, *expected))]


def answers(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def check(port: int, path: str, status: int, location: str | None) -> str | None:
    opener = urllib.request.build_opener(NoRedirect)
    try:
        response = opener.open(f"http://127.0.0.1:{port}{path}", timeout=30)
    except urllib.error.HTTPError as error:
        response = error
    got = (response.status, response.headers.get("Location"))
    if got != (status, location):
        return f"GET {path} answered {got}, expected {(status, location)}"
    return None


def check_mix(environment: dict[str, str]) -> list[str]:
    """Wait until the seeded jobs show the whole mix at once (the workers must have
    started the long jobs, the scheduler stored its recurring tasks)."""
    deadline = time.monotonic() + MIX_TIMEOUT
    while True:
        counts = read_counts(environment)
        missing = {
            state: counts.get(state, 0)
            for state, minimum in MIX_MINIMUMS.items()
            if counts.get(state, 0) < minimum
        }
        if not missing:
            print(f"demo_smoke: the demo's mix of jobs: {counts}")
            return []
        if time.monotonic() > deadline:
            wanted = {state: MIX_MINIMUMS[state] for state in missing}
            return [f"after {MIX_TIMEOUT:.0f}s the demo still lacks {missing} (wanted {wanted})"]
        time.sleep(1)


def read_counts(environment: dict[str, str]) -> dict[str, int]:
    code = "import json; from demo import seeding; print(json.dumps(seeding.counts()))"
    return json.loads(manage_shell(code, environment))


def check_dashboard(port: int, environment: dict[str, str]) -> list[str]:
    """Log in through the admin's form, then read every dashboard screen."""
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    login_page = opener.open(f"{base}/admin/login/?next=/jobs/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page)
    if token is None:
        return ["the admin login page has no CSRF token"]
    form = {
        "csrfmiddlewaretoken": token.group(1),
        "username": USERNAME,
        "password": PASSWORD,
        "next": "/jobs/",
    }
    request = urllib.request.Request(
        f"{base}/admin/login/?next=/jobs/",
        data=urllib.parse.urlencode(form).encode(),
        headers={"Referer": f"{base}/admin/login/"},
    )
    landed = opener.open(request, timeout=30)
    if urllib.parse.urlparse(landed.url).path != "/jobs/":
        return [f"logging in as {USERNAME!r} landed on {landed.url}, not the dashboard"]
    problems = []
    for path in DASHBOARD_PAGES:
        try:
            status = opener.open(f"{base}{path}", timeout=30).status
        except urllib.error.HTTPError as error:
            status = error.code
        if status != 200:
            problems.append(f"GET {path} as staff answered {status}, expected 200")
    return problems + check_cards_masked(opener, base, environment)


def check_cards_masked(opener, base: str, environment: dict[str, str]) -> list[str]:
    """The demo's charge_card masks its card number: no page may show one in full."""
    code = (
        "import json; from steady_queue.models import Job; print(json.dumps(list("
        "Job.objects.filter(task_path='demo.tasks.charge_card').values_list('pk', flat=True))))"
    )
    job_ids = json.loads(manage_shell(code, environment))
    if not job_ids:
        return ["the demo enqueued no charge_card job"]
    paths = ["/jobs/failed/", "/jobs/scheduled/", *(f"/jobs/{pk}/" for pk in job_ids)]
    shown = []
    for path in paths:
        body = opener.open(f"{base}{path}", timeout=30).read().decode()
        if CARD_NUMBER.search(body):
            shown.append(path)
    return [f"a card number is shown in full on {', '.join(shown)}"] if shown else []


def manage_shell(code: str, environment: dict[str, str]) -> str:
    """Run ``code`` in the demo's ``manage.py shell``; return its last line of output."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "demo_site" / "manage.py"), "shell", "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1]


def stop(demo: subprocess.Popen) -> list[str]:
    if demo.poll() is not None:
        return [f"the demo had already exited with status {demo.returncode}"]
    demo.send_signal(signal.SIGTERM)
    try:
        code = demo.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        demo.kill()
        return [f"the demo did not stop within {STOP_TIMEOUT:.0f}s of TERM"]
    return [] if code == 0 else [f"the demo exited with status {code} after TERM"]


if __name__ == "__main__":
    sys.exit(main())
