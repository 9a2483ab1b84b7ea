"""Queues as operators see them: size, latency, pauses, and the list of all queues."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import Pause, Queue, ReadyExecution
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db


def test_size_and_latency_describe_the_ready_jobs():
    assert Queue("low").size == 0
    assert Queue("low").latency is None
    for _ in range(3):
        tasks.noop.using(queue_name="low").enqueue()
    ReadyExecution.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    queue = Queue("low")
    assert queue.size == 3
    assert timedelta(minutes=5) <= queue.latency < timedelta(minutes=6)


def test_pause_and_resume():
    queue = Queue("background")
    queue.pause()
    queue.pause()  # pausing twice is harmless
    assert queue.is_paused
    tasks.noop.using(queue_name="background").enqueue()
    assert run_ready_jobs() == []
    queue.resume()
    assert not queue.is_paused
    assert len(run_ready_jobs()) == 1


def test_all_lists_queues_with_ready_jobs_or_pauses_in_two_queries(
    django_assert_num_queries,
):
    for queue_name in ("default", "low", "low", "real_time"):
        tasks.noop.using(queue_name=queue_name).enqueue()
    Pause.objects.create(queue_name="other")
    with django_assert_num_queries(2):
        queues = Queue.all()
        described = [(q.name, q.size, q.is_paused, q.latency is not None) for q in queues]
    assert described == [
        ("default", 1, False, True),
        ("low", 2, False, True),
        ("other", 0, True, False),
        ("real_time", 1, False, True),
    ]
    assert queues[0] == Queue("default")
