"""The Prometheus scaler's alternative in the Kubernetes guide names series the scrape has.

The guide offers KEDA's Prometheus scaler over the existing metrics instead of the
PostgreSQL queries; the metric names and state labels it writes must be those that
``metrics_view`` answers, with the values the PostgreSQL queries would give.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import ReadyExecution
from tests import tasks
from tests.observability.metrics import TOKEN, sample, scrape

from .files import ROOT

pytestmark = pytest.mark.urls("tests.observability.urls")
GUIDE = ROOT / "docs" / "how-to" / "deploy-kubernetes.md"


def alternative() -> str:
    """The guide's bullet on the Prometheus scaler."""
    (bullet,) = re.findall(
        r"- \*\*Through Prometheus instead\*\*.*?(?=\n\n|\n- )", GUIDE.read_text(), re.S
    )
    return bullet


def test_the_alternative_names_the_ready_running_and_latency_series(db, settings):
    settings.STEADY_QUEUE_METRICS_TOKEN = TOKEN
    text = alternative()
    assert 'sum(steady_queue_jobs{state=~"ready|running"})' in text
    assert "max(steady_queue_queue_latency_seconds)" in text
    for _ in range(3):
        tasks.noop.using(queue_name="background").enqueue()
    first = tasks.noop.enqueue()
    ReadyExecution.objects.filter(job_id=first.id).update(
        created_at=timezone.now() - timedelta(seconds=45)
    )
    ReadyExecution.claim(["background"], 1, None)
    samples = scrape()
    ready = sum(
        sample(samples, "steady_queue_jobs", queue=q, state="ready") or 0
        for q in ("default", "background")
    )
    running = sample(samples, "steady_queue_jobs", queue="background", state="running")
    assert (ready, running) == (3, 1)
    assert 45 <= sample(samples, "steady_queue_queue_latency_seconds", queue="default") < 60
