"""The tutorial, followed word for word, ends with a finished job shown in the console.

Its blocks run in order in a temporary directory (see ``tutorial_run``): a new Django
project on SQLite, the settings, URLs and task it shows, ``migrate``, a superuser,
``runserver``, the enqueue, then ``manage.py steady_queue``. Before the workers start,
the console lists the job as ready; after, as finished, with its return value.

It starts real processes and runs ``migrate`` on a new database (some 15 s), so it is
marked slow and left out of ``make test``; ``make docs-test`` (CI's docs stage) runs
it. ``SQ_DOCS_FRESH_VIRTUALENV=1`` follows the virtualenv lines for real too (a new
virtualenv and ``pip install`` of this checkout: a minute more, and the network).
"""

from __future__ import annotations

import html
import os
import re

import pytest

from .pages import blocks, tutorial
from .tutorial_run import VIRTUALENV_LINES, Browser, TutorialRun, wait_until

pytestmark = pytest.mark.slow

USERNAME, PASSWORD = "admin", "tutorial-pw"


@pytest.fixture
def tutorial_run(tmp_path):
    fresh = os.environ.get("SQ_DOCS_FRESH_VIRTUALENV") == "1"
    run = TutorialRun(tmp_path, fresh_virtualenv=fresh)
    yield run
    run.stop()
    print(run.server_output())


def test_following_the_tutorial_shows_the_job_ready_then_finished_in_the_console(tutorial_run):
    run = tutorial_run
    browser = None
    steps = [block for block in blocks(tutorial()) if block.language in ("console", "python")]
    for block in steps:
        if "python manage.py steady_queue" in block.code:
            browser = _the_job_waits_as_ready(run)
        run.follow(block)
    assert run.virtualenv_lines[:3] == VIRTUALENV_LINES, "the tutorial's virtualenv steps"
    assert browser is not None, "the tutorial never starts the workers"
    job_page = html.unescape(
        wait_until(lambda: _finished(browser.get("/jobs/1/")), timeout=60, what="job 1 to finish")
    )
    assert "myapp.tasks.add" in job_page
    assert '"args": [\n    2,\n    3\n  ]' in job_page  # its arguments
    assert re.search(r"<td>worker-[0-9a-f]+</td>", job_page)  # the worker that ran it
    assert '<pre class="code">5</pre>' in job_page  # its return value
    assert "myapp.tasks.add" in browser.get("/jobs/finished/")
    # The ten more the tutorial enqueues last go through too.
    wait_until(
        lambda: all(_finished(browser.get(f"/jobs/{pk}/")) for pk in range(2, 12)),
        timeout=60,
        what="jobs 2 to 11 to finish",
    )


def _the_job_waits_as_ready(run: TutorialRun) -> Browser:
    last_lines = [output.strip().splitlines()[-1] for output in run.outputs if output.strip()]
    assert last_lines[-1] == "1", f"the enqueue printed {run.outputs[-1]!r}, not the id 1"
    browser = Browser(run.url)
    overview = browser.log_in(USERNAME, PASSWORD, next_path="/jobs/")
    assert "Ready" in overview
    assert "myapp.tasks.add" in browser.get("/jobs/ready/")
    assert not _finished(browser.get("/jobs/1/"))
    return browser


def _finished(job_page: str) -> str | None:
    return job_page if '<pre class="code">' in job_page and "Return value" in job_page else None
