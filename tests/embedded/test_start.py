"""``steady_queue.embedded.start()`` in this very process, and the lifespan's answers."""

from __future__ import annotations

import asyncio

import pytest

import steady_queue
from steady_queue.embedded import EmbeddedQueueAlreadyRunning, lifespan, start
from steady_queue.models import Job, Process
from tests.processes.configs import WORKER
from tests.processes.conftest import wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stop_after():
    started = []
    yield started.append
    for queue in started:
        queue.quit(timeout=30)


def test_start_runs_jobs_in_threads_and_a_second_start_raises(stop_after, tmp_path):
    queue = start(WORKER)
    stop_after(queue)

    with pytest.raises(EmbeddedQueueAlreadyRunning, match="already runs in this process"):
        start(WORKER)
    log = str(tmp_path / "runs.log")
    result = tasks.record.enqueue(log, "in-process")
    wait_until(lambda: Job.objects.get(pk=result.id).finished_at, what="the job to run")
    assert Process.objects.filter(kind=Process.Kind.SUPERVISOR).count() == 1

    assert queue.stop(timeout=30) is True
    assert not queue.running
    assert not Process.objects.exists()
    again = start(WORKER)  # once stopped, a queue may start again
    stop_after(again)
    assert again.running


def test_an_unknown_embedded_processes_setting_fails_the_lifespan_startup(monkeypatch):
    monkeypatch.setattr(steady_queue, "embedded_processes", "everything")
    sent: list[dict] = []

    async def receive():
        return {"type": "lifespan.startup"}

    async def send(message):
        sent.append(message)

    async def never_called(scope, receive, send):
        raise AssertionError("lifespan messages must not reach Django")

    asyncio.run(lifespan(never_called)({"type": "lifespan"}, receive, send))

    [failed] = sent
    assert failed["type"] == "lifespan.startup.failed"
    assert "steady_queue.embedded_processes is 'everything'" in failed["message"]
    assert not Process.objects.exists()


def test_other_scopes_pass_through_the_lifespan_wrapper():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(lifespan(app)({"type": "http"}, None, None))
    asyncio.run(lifespan(app)({"type": "websocket"}, None, None))
    assert seen == ["http", "websocket"]


def test_an_interpreter_exiting_normally_stops_its_queue_gracefully(serve, run_log, tmp_path):
    done = tmp_path / "done"
    script = serve("tests.embedded.exit_normally", str(done))
    script.wait_for_queue(children=3)
    release = tmp_path / "release"
    held = tasks.hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: run_log.entries("start") == ["held"], what="the job to start")

    done.touch()  # the script returns without calling stop()
    wait_until(lambda: "Stopped Dispatcher" in script.output(), what="the queue to stop")
    release.touch()

    assert script.wait() == 0, script.output()
    assert Job.objects.get(pk=held.id).finished_at is not None
    assert not Process.objects.exists()
